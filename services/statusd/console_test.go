package main

import (
	"os"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

// TestPrepareTTY: the console keeps the speed the kernel's console was
// given, and reads lines with echo.
func TestPrepareTTY(t *testing.T) {
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer ptmx.Close()
	if err := unix.IoctlSetPointerInt(int(ptmx.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(ptmx.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	tty, err := os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer tty.Close()
	cur, _ := unix.IoctlGetTermios(int(tty.Fd()), unix.TCGETS)
	cur.Cflag = cur.Cflag&^unix.CBAUD | unix.B9600
	cur.Lflag &^= unix.ICANON | unix.ECHO
	unix.IoctlSetTermios(int(tty.Fd()), unix.TCSETS, cur)
	if err := prepareTTY(tty, "/dev/ttyS0", "root=/dev/sda2 console=tty1 console=ttyS0,115200n8 panic=10"); err != nil {
		t.Fatal(err)
	}
	// A pseudo-terminal keeps no speed: that part is consoleTermios's.
	got, _ := unix.IoctlGetTermios(int(tty.Fd()), unix.TCGETS)
	if got.Lflag&unix.ICANON == 0 || got.Lflag&unix.ECHO == 0 || got.Iflag&unix.ICRNL == 0 {
		t.Errorf("termios after prepareTTY: lflag %#o iflag %#o; want canonical with echo, CR as NL", got.Lflag, got.Iflag)
	}
	for _, c := range []struct {
		dev, cmdline string
		want         uint32
	}{
		{"/dev/ttyS0", "root=/dev/sda2 console=tty1 console=ttyS0,115200n8 panic=10", unix.B115200},
		{"/dev/ttyS1", "console=ttyS1,9600", unix.B9600},
		{"/dev/ttyS0", "console=ttyS1,9600", unix.B38400}, // another port's: left alone
		{"/dev/tty1", "console=ttyS0,115200 console=tty1", unix.B38400},
	} {
		tm := unix.Termios{Cflag: unix.B38400 | unix.CS8}
		consoleTermios(&tm, c.dev, c.cmdline)
		if tm.Cflag&unix.CBAUD != c.want || tm.Cflag&unix.CS8 == 0 {
			t.Errorf("%s with %q: cflag %#o, want speed %#o and CS8 kept", c.dev, c.cmdline, tm.Cflag, c.want)
		}
	}
}
