// Package partition numbers the partitions of an ncpos disk, as gokrazy's
// rootdev expects them. It is the one part of the image layout the
// appliance needs (to install itself and to tell its roots apart), kept
// apart from the image builder so that the appliance does not link it.
package partition

// Partition numbers (1-based, as in /dev/sda1).
const (
	Boot  = 1 // FAT: kernel, loaders, cmdline
	RootA = 2 // squashfs root
	RootB = 3 // the other root, written by updates
	Perm  = 4 // ext4, the box's own data
)
