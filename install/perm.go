package install

import (
	"errors"
	"fmt"
	"io"
)

// errPermElsewhere is wrapped by the error for a target whose ncpos /perm
// lies where the new image does not put it, so it can be neither kept nor
// silently overwritten.
var errPermElsewhere = errors.New("its ncpos /perm is at a different place than the new image's")

// permPlan is what happens to the target's existing /perm.
type permPlan struct {
	Keep         bool  // leave [Offset, Offset+Size) unwritten
	Offset, Size int64 // the target's existing /perm, if any
	Note         string
}

// planPerm decides about the target's /perm. A target already holding
// ncpos keeps its configuration and records when the new image's /perm
// (partition 4) is at exactly the same start and size and the target's
// partition 4 holds ext4: that byte range is then not written, so the file
// system inside stays as it was. If the target's /perm is elsewhere it
// cannot be kept, and wiping it silently would lose the configuration, so
// that is refused unless wipe.
func planPerm(img *mbr, target io.ReaderAt, targetPath string, wipe bool) (permPlan, error) {
	old, ok, err := readMBR(target)
	if err != nil {
		return permPlan{}, fmt.Errorf("reading the partition table of %s: %w", targetPath, err)
	}
	if !ok || old.ncposLayout() != nil {
		return permPlan{Note: "no ncpos installation on it: writing the whole image"}, nil
	}
	op, np := old.perm(), img.perm()
	label, isExt4 := ext4Label(target, op.Offset())
	if !isExt4 {
		return permPlan{Note: "it has an ncpos partition table but no ext4 in partition 4: writing the whole image"}, nil
	}
	plan := permPlan{Offset: op.Offset(), Size: op.Size()}
	where := fmt.Sprintf("partition 4 at %s, %s, ext4 label %q", mib(op.Offset()), mib(op.Size()), label)
	if wipe {
		plan.Note = fmt.Sprintf("-wipe-perm: erasing its /perm (%s)", where)
		return plan, nil
	}
	if op.Offset() != np.Offset() || op.Size() != np.Size() {
		return permPlan{}, &RefusedError{Target: targetPath, Err: errPermElsewhere, Reasons: []string{fmt.Sprintf(
			"it holds an ncpos /perm (%s) but the image puts /perm at %s, %s; to keep its configuration and records "+
				"build the image for this layout (ncpos build -size %dMiB), or pass -wipe-perm to erase them",
			where, mib(np.Offset()), mib(np.Size()), op.End()>>20)}}
	}
	plan.Keep = true
	plan.Note = fmt.Sprintf("keeping its /perm (%s): configuration and records stay", where)
	return plan, nil
}
