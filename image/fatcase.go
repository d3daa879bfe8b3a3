package image

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"os"
	"strings"
)

// lowercaseDirs stores the 8.3 names of the given directories (paths from
// the root, no extension, at most 8 characters each) in lower case.
//
// Why: gokrazy's update handlers edit /cmdline.txt and
// /loader/entries/gokrazy.conf in place through gokrazy's own minimal FAT16
// reader. That reader matches a directory without extension only by its
// stored short name as written by gokrazy's writer, which is lower case;
// mtools, like every FAT driver, stores short names in upper case (with the
// "lower case" display flag). Lower-casing the two stored names lets
// gokrazy find the systemd-boot entry; FAT drivers (Linux, UEFI firmware)
// compare short names without regard to case, so they still find them.
func lowercaseDirs(path string, dirs ...string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	defer f.Close()
	bs := make([]byte, 512)
	if _, err := f.ReadAt(bs, 0); err != nil {
		return err
	}
	var (
		bps         = int64(binary.LittleEndian.Uint16(bs[11:13]))
		spc         = int64(bs[13])
		reserved    = int64(binary.LittleEndian.Uint16(bs[14:16]))
		fats        = int64(bs[16])
		rootEntries = int64(binary.LittleEndian.Uint16(bs[17:19]))
		spf         = int64(binary.LittleEndian.Uint16(bs[22:24]))
	)
	if bps == 0 || spc == 0 || rootEntries == 0 || spf == 0 {
		return fmt.Errorf("%s: not a FAT16 file system", path)
	}
	rootOff := (reserved + fats*spf) * bps
	dataOff := rootOff + (rootEntries*32+bps-1)/bps*bps
	clusterSize := spc * bps

	for _, dir := range dirs {
		off, n := rootOff, rootEntries // start in the root directory
		parts := strings.Split(dir, "/")
		for i, name := range parts {
			short := []byte(fmt.Sprintf("%-11s", strings.ToUpper(name)))
			buf := make([]byte, n*32)
			if _, err := f.ReadAt(buf, off); err != nil {
				return err
			}
			found := false
			for e := int64(0); e < n; e++ {
				ent := buf[e*32 : e*32+32]
				if ent[0] == 0 {
					break
				}
				if ent[11]&0x10 == 0 || !bytes.Equal(bytes.ToUpper(ent[:11]), short) {
					continue
				}
				found = true
				if i == len(parts)-1 {
					copy(ent[:11], bytes.ToLower(ent[:11]))
					if _, err := f.WriteAt(ent[:11], off+e*32); err != nil {
						return err
					}
				}
				cluster := int64(binary.LittleEndian.Uint16(ent[26:28]))
				off, n = dataOff+(cluster-2)*clusterSize, clusterSize/32
				break
			}
			if !found {
				return fmt.Errorf("%s: no directory %q", path, dir)
			}
		}
	}
	return f.Sync()
}
