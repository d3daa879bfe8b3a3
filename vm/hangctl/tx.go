package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"log"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// The Transmit Control register of the Intel 82574L (and the whole e1000
// family) is at offset 0x00400 of the memory BAR, and its bit 1 (EN)
// enables the transmit unit: with it clear, the MAC fetches no
// descriptor, so frames queue in the ring and none leaves (Intel 82574 GbE
// Controller Family datasheet, "Transmit Control Register - TCTL"; the
// kernel's e1000e driver names them E1000_TCTL and E1000_TCTL_EN).
const (
	regTCTL = 0x00400
	tctlEN  = 1 << 1
)

// txHandler stops or starts the transmit unit of an 82574L port by
// writing TCTL.EN through the port's I/O BAR, behind the driver's back:
// the driver keeps queueing frames, as it would on a box whose egress
// stopped, so the QEMU tests can make a real transmit stall.
func txHandler(enable bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ifname := r.URL.Query().Get("port")
		if ifname == "" || strings.ContainsAny(ifname, "/.") {
			http.Error(w, "want ?port=IFNAME", http.StatusBadRequest)
			return
		}
		old, now, err := setTransmit(ifname, enable)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		log.Printf("hangctl: %s TCTL %#08x -> %#08x", ifname, old, now)
		fmt.Fprintf(w, "%s TCTL %#08x -> %#08x\n", ifname, old, now)
	}
}

func setTransmit(ifname string, enable bool) (old, now uint32, err error) {
	dev := filepath.Join("/sys/class/net", ifname, "device")
	drv, err := os.Readlink(filepath.Join(dev, "driver"))
	if err != nil {
		return 0, 0, fmt.Errorf("%s: no PCI driver: %w", ifname, err)
	}
	if filepath.Base(drv) != "e1000e" {
		return 0, 0, fmt.Errorf("%s: driver %s, want e1000e (the 82574L's register map)", ifname, filepath.Base(drv))
	}
	bar, err := ioBAR(dev)
	if err != nil {
		return 0, 0, fmt.Errorf("%s: %w", ifname, err)
	}
	f, err := os.OpenFile(filepath.Join(dev, fmt.Sprintf("resource%d", bar)), os.O_RDWR, 0)
	if err != nil {
		return 0, 0, fmt.Errorf("%s: I/O BAR: %w", ifname, err)
	}
	defer f.Close()
	if old, err = readReg(f, regTCTL); err != nil {
		return 0, 0, fmt.Errorf("%s: reading TCTL: %w", ifname, err)
	}
	now = old &^ tctlEN
	if enable {
		now = old | tctlEN
	}
	if err := writeReg(f, regTCTL, now); err != nil {
		return 0, 0, fmt.Errorf("%s: writing TCTL: %w", ifname, err)
	}
	if now, err = readReg(f, regTCTL); err != nil {
		return 0, 0, fmt.Errorf("%s: reading TCTL back: %w", ifname, err)
	}
	return old, now, nil
}

// The driver claims the memory BAR for itself (the kernel refuses to map
// it), but not the I/O BAR, through which every register is reachable
// too: write the register's offset to IOADDR (I/O offset 0), then read or
// write IODATA (offset 4) (the datasheet's "I/O-Mapped Internal Register,
// Internal Memory, and Flash").
const (
	ioAddr = 0
	ioData = 4
)

// ioBAR finds the port's I/O BAR: the line of its sysfs "resource" file
// whose flags have IORESOURCE_IO (0x100).
func ioBAR(dev string) (int, error) {
	b, err := os.ReadFile(filepath.Join(dev, "resource"))
	if err != nil {
		return 0, err
	}
	for i, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 {
			continue
		}
		flags, err := strconv.ParseUint(f[2], 0, 64)
		if err == nil && flags&0x100 != 0 {
			return i, nil
		}
	}
	return 0, errors.New("no I/O BAR")
}

func readReg(f *os.File, reg uint32) (uint32, error) {
	if err := pwrite32(f, ioAddr, reg); err != nil {
		return 0, err
	}
	var b [4]byte
	if _, err := f.ReadAt(b[:], ioData); err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint32(b[:]), nil
}

func writeReg(f *os.File, reg, v uint32) error {
	if err := pwrite32(f, ioAddr, reg); err != nil {
		return err
	}
	return pwrite32(f, ioData, v)
}

func pwrite32(f *os.File, off int64, v uint32) error {
	var b [4]byte
	binary.LittleEndian.PutUint32(b[:], v)
	_, err := f.WriteAt(b[:], off)
	return err
}
