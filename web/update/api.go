// Package update serves a box's updates over the network: the steps of
// an update (a signed manifest, the root, the kernel, a test boot and the
// switch) through statusd's authenticated API, the root handed on to
// gokrazy on its socket, the rest done here.
package update

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/ncpos/ncpos/bootpart"
	"github.com/ncpos/ncpos/events"
	"github.com/ncpos/ncpos/signature"
	"github.com/ncpos/ncpos/web/caller"
	"github.com/ncpos/ncpos/web/gokrazy"
	"github.com/ncpos/ncpos/web/reply"
)

// Updates pass through statusd: gokrazy serves its update endpoints only
// on its socket, and statusd hands them an operator's request after
// checking the password and the origin, with limits of its own.
const (
	// Timeout bounds one update request: a root image over a slow
	// link to a remote site takes minutes, not hours.
	Timeout = 30 * time.Minute
	// MaxBytes bounds one partition image.
	MaxBytes = 1 << 30
	// maxManifestBytes bounds a build's signed manifest.
	maxManifestBytes = 64 << 10
	// maxKernelBytes bounds a kernel: a slot's kernel file.
	maxKernelBytes = bootpart.KernelFileSize
)

// updateSteps are the steps of an update, by the name in statusd's route,
// with the method each takes. gokrazy writes the root (its /update/root,
// which answers the SHA-256 written); the box does the others itself.
var updateSteps = map[string]string{
	"manifest": http.MethodPut,  // the build's signed manifest, checked here
	"root":     http.MethodPut,  // the inactive root partition
	"kernel":   http.MethodPut,  // the inactive slot's kernel, written here
	"testboot": http.MethodPost, // boot the inactive slot once
	"switch":   http.MethodPost, // boot the running slot from now on
}

// BootSlots is the box's boot partition as an update drives it: a kernel
// per root slot, the slot booted by default and the one booted once
// (bootpart.Box on the appliance).
type BootSlots interface {
	Read() (*bootpart.State, error)
	KernelHash(bootpart.Slot) (string, error)
	WriteKernel(bootpart.Slot, []byte) error
	BootOnce(bootpart.Slot) error
	SetDefault(bootpart.Slot) error
}

// handleBootFiles answers the SHA-256 of every file on the boot partition,
// and which slot it boots. Hashing its two kernel files of 24 MiB takes
// longer than the server's write timeout on a slow card, or on an emulated
// box beside others, so the answer has an update's time: past its
// deadline it would be lost, and the client would see the connection's
// close out of sequence, which Go reports as "tls: bad record MAC".
func (s *API) bootFiles(w http.ResponseWriter) {
	if s.BootFiles == nil {
		reply.Error(w, http.StatusServiceUnavailable, "this box cannot read its boot partition")
		return
	}
	http.NewResponseController(w).SetWriteDeadline(time.Now().Add(Timeout))
	files, err := s.BootFiles()
	if err != nil {
		reply.Error(w, http.StatusInternalServerError, err.Error())
		return
	}
	out := map[string]any{"files": files}
	if s.Boot != nil {
		st, err := s.Boot.Read()
		if err != nil {
			reply.Error(w, http.StatusInternalServerError, err.Error())
			return
		}
		out["slots"] = st
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(out)
}

// API serves /api/v1/update/{step}.
type API struct {
	// Gate checks updates before gokrazy writes them; nil: updates are
	// refused (the build trusts no keys).
	Gate *Gate
	// BootFiles hashes the files on the box's boot partition, for an
	// update to leave it alone when it would write the same; nil: the
	// box cannot tell (GET /api/v1/update/boot answers 503).
	BootFiles func() (map[string]string, error)
	// Boot drives the boot partition's slots for an update (the kernel,
	// test boot and switch steps); nil: the box cannot (503).
	Boot BootSlots
	// GokrazySocket is where gokrazy serves its update endpoints ("":
	// gokrazy.Socket).
	GokrazySocket string
	Events        *events.Log
}

func (s *API) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.PathValue("step") == "boot" {
		// The box writes its boot partition itself; it only shows it.
		if r.Method != http.MethodGet {
			w.Header().Set("Allow", http.MethodGet)
			reply.Error(w, http.StatusMethodNotAllowed, "update/boot takes GET: the box writes its boot partition itself (PUT the kernel)")
			return
		}
		s.bootFiles(w)
		return
	}
	method, ok := updateSteps[r.PathValue("step")]
	if !ok {
		reply.Error(w, http.StatusNotFound, fmt.Sprintf("no update step %q, want manifest, root, kernel, testboot or switch", r.PathValue("step")))
		return
	}
	if r.Method != method {
		w.Header().Set("Allow", method)
		reply.Error(w, http.StatusMethodNotAllowed, "update step "+r.PathValue("step")+" takes "+method)
		return
	}
	if r.ContentLength > MaxBytes {
		reply.Error(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("update body of %d bytes, want at most %d", r.ContentLength, MaxBytes))
		return
	}
	name, by := r.PathValue("step"), caller.Who(r)
	refuse := func(code int, err error) {
		s.Events.Note(events.Warning, events.KindControl, []string{"action", "update", "step", name, "by", by},
			fmt.Sprintf("update %s by %s refused: %v", name, by, err))
		reply.Error(w, code, err.Error())
	}
	if s.Gate == nil {
		refuse(http.StatusServiceUnavailable, errors.New("this build trusts no update keys: it takes no updates over the network"))
		return
	}
	// Longer than the server's limits, which are for the dashboard.
	rc := http.NewResponseController(w)
	rc.SetReadDeadline(time.Now().Add(Timeout))
	rc.SetWriteDeadline(time.Now().Add(Timeout))
	var body io.Reader = http.MaxBytesReader(reply.Innermost(w), r.Body, MaxBytes)
	rootWritten := false
	var ctx context.Context // the root upload's, which a new manifest aborts
	switch name {
	case "manifest":
		check := r.URL.Query().Get("check") == "1"
		if !check {
			// A manifest starts an update anew: whatever one was
			// pending is dropped, even when this one is cut off.
			if err := s.Gate.drop(); err != nil {
				refuse(http.StatusConflict, err)
				return
			}
		}
		b, err := io.ReadAll(io.LimitReader(r.Body, maxManifestBytes+1))
		if err == nil && len(b) > maxManifestBytes {
			err = fmt.Errorf("manifest larger than %d bytes", maxManifestBytes)
		}
		if err != nil {
			refuse(http.StatusBadRequest, err)
			return
		}
		permanent := true
		if s.Boot != nil {
			st, err := s.Boot.Read()
			if err != nil {
				refuse(http.StatusInternalServerError, fmt.Errorf("reading the boot partition: %w", err))
				return
			}
			permanent = !st.TestBoot()
		}
		m, err := s.Gate.accept(b, r.URL.Query().Get("downgrade") == "1", check, permanent)
		switch {
		case errors.Is(err, signature.ErrUnsigned), errors.Is(err, signature.ErrUntrusted), errors.Is(err, signature.ErrForged), errors.Is(err, signature.ErrRollback):
			refuse(http.StatusForbidden, err)
			return
		case errors.Is(err, signature.ErrDowngrade), errors.Is(err, signature.ErrSameBuild), errors.Is(err, errBusy):
			refuse(http.StatusConflict, err)
			return
		case err != nil:
			refuse(http.StatusBadRequest, err)
			return
		}
		msg := fmt.Sprintf("manifest of build %s (built %s, root %d bytes, kernel %d bytes) accepted", m.BuildID, m.Built.UTC().Format(time.RFC3339), m.Root.Size, m.Kernel.Size)
		if check {
			msg = strings.Replace(msg, "accepted", "would be accepted (checked only)", 1)
		}
		s.Events.Note(events.Notice, events.KindControl, []string{"action", "update", "step", name, "by", by}, "update "+msg+" from "+by)
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, msg)
		return
	case "root":
		// Received in full and checked before gokrazy writes a byte:
		// a cut-off or altered upload leaves the inactive root as it
		// was.
		// A new manifest aborts this upload: the read of its body
		// and the write through gokrazy end at once.
		upload, cancel := context.WithCancel(r.Context())
		defer cancel()
		m, release, err := s.Gate.claim("root", func() {
			rc.SetReadDeadline(time.Now())
			cancel()
		})
		if err != nil {
			refuse(http.StatusConflict, err)
			return
		}
		ctx = upload
		// Only this manifest's root, written whole, lets its test boot
		// go on; a new manifest aborts the upload and waits for it to end.
		defer func() { release(rootWritten) }()
		want := m.Root
		if r.ContentLength < 0 {
			refuse(http.StatusLengthRequired, errors.New("root sent without a Content-Length: the signed build's is needed up front"))
			return
		}
		if r.ContentLength != want.Size {
			refuse(http.StatusBadRequest, fmt.Errorf("root of %d bytes announced, the signed build's is %d", r.ContentLength, want.Size))
			return
		}
		if err := s.Gate.roomFor(want.Size); err != nil {
			refuse(http.StatusInsufficientStorage, err)
			return
		}
		b := make([]byte, want.Size)
		if _, err := io.ReadFull(body, b); err != nil {
			refuse(http.StatusBadRequest, fmt.Errorf("receiving the root: %w (nothing written)", err))
			return
		}
		if err := want.Check("root", b); err != nil {
			refuse(http.StatusForbidden, fmt.Errorf("%w (nothing written)", err))
			return
		}
		body = bytes.NewReader(b)
	default:
		code, msg, err := s.bootStep(name, body, r.ContentLength, func() { rc.SetReadDeadline(time.Now()) })
		if err != nil {
			refuse(code, err)
			return
		}
		s.Events.Note(events.Notice, events.KindControl, []string{"action", "update", "step", name, "by", by}, "update "+name+" by "+by+": "+msg)
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		fmt.Fprintln(w, msg)
		return
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPut, "http://gokrazy/update/root", body)
	if err != nil {
		reply.Error(w, http.StatusInternalServerError, err.Error())
		return
	}
	req.ContentLength = r.ContentLength
	start := time.Now()
	resp, err := gokrazy.Client(s.GokrazySocket, Timeout).Do(req)
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		reply.Error(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("update body larger than %d bytes", MaxBytes))
		return
	case err != nil:
		s.Events.Note(events.Warning, events.KindControl, []string{"action", "update", "step", r.PathValue("step"), "by", by},
			fmt.Sprintf("update %s by %s failed: %v", r.PathValue("step"), by, err))
		reply.Error(w, http.StatusBadGateway, "passing the update to gokrazy: "+err.Error())
		return
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	rootWritten = resp.StatusCode == http.StatusOK
	msg := fmt.Sprintf("update %s by %s: %s", r.PathValue("step"), by, resp.Status)
	if r.ContentLength > 0 {
		msg += fmt.Sprintf(", %d bytes in %v", r.ContentLength, time.Since(start).Round(time.Millisecond))
	}
	sev := events.Notice
	if resp.StatusCode != http.StatusOK {
		sev = events.Warning
		msg += ": " + strings.TrimSpace(string(answer))
	}
	s.Events.Note(sev, events.KindControl, []string{"action", "update", "step", r.PathValue("step"), "by", by}, msg)
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(resp.StatusCode)
	w.Write(answer)
}

// bootStep does an update step on the boot partition: the inactive slot's
// kernel, received in full and checked against the signed manifest before
// the box writes it; the test boot of that slot, once its kernel and root
// are the build's; and the switch to the slot a test boot runs. It
// answers what it did, or the status code and why it refused.
func (s *API) bootStep(name string, body io.Reader, length int64, abort func()) (int, string, error) {
	var m *signature.Manifest
	switch name {
	case "switch":
	case "kernel":
		var release func(bool)
		var err error
		if m, release, err = s.Gate.claim("kernel", abort); err != nil {
			return http.StatusConflict, "", err
		}
		defer release(true)
	case "testboot":
		var err error
		if m, err = s.Gate.manifest(); err != nil {
			return http.StatusConflict, "", err
		}
	default:
		return http.StatusNotFound, "", fmt.Errorf("no update step %q", name)
	}
	if name == "testboot" {
		if err := s.Gate.afterRoot(name); err != nil {
			return http.StatusConflict, "", err
		}
	}
	if s.Boot == nil {
		return http.StatusServiceUnavailable, "", errors.New("this box cannot change its boot partition")
	}
	st, err := s.Boot.Read()
	if err != nil {
		return http.StatusInternalServerError, "", fmt.Errorf("reading the boot partition: %w", err)
	}
	target := st.Running.Other()
	switch name {
	case "switch":
		if !st.TestBoot() {
			return http.StatusConflict, "", fmt.Errorf("nothing to make permanent: the box runs slot %s, which it boots by default", st.Running)
		}
		if err := s.Boot.SetDefault(st.Running); err != nil {
			return http.StatusInternalServerError, "", err
		}
		if err := s.Gate.raiseFloor(); err != nil {
			return http.StatusInternalServerError, "", fmt.Errorf("slot %s boots from now on, but its security version %d was not recorded as the floor: %w", st.Running, s.Gate.SecurityVersion, err)
		}
		return 0, fmt.Sprintf("slot %s (root partition %d) boots from now on; no build below security version %d is taken", st.Running, st.Running.Partition(), s.Gate.SecurityVersion), nil
	case "kernel":
		if st.TestBoot() {
			return http.StatusConflict, "", fmt.Errorf("the box test-boots slot %s and boots slot %s by default: make the test boot permanent or reboot first", st.Running, st.Default)
		}
		want := m.Kernel
		switch {
		case length < 0:
			return http.StatusLengthRequired, "", errors.New("kernel sent without a Content-Length: the signed build's is needed up front")
		case length != want.Size:
			return http.StatusBadRequest, "", fmt.Errorf("kernel of %d bytes announced, the signed build's is %d", length, want.Size)
		case want.Size > maxKernelBytes:
			return http.StatusRequestEntityTooLarge, "", fmt.Errorf("the signed build's kernel of %d bytes is larger than the %d the boot partition makes room for", want.Size, maxKernelBytes)
		}
		k := make([]byte, want.Size)
		if _, err := io.ReadFull(body, k); err != nil {
			return http.StatusBadRequest, "", fmt.Errorf("receiving the kernel: %w (nothing written)", err)
		}
		if err := want.Check("kernel", k); err != nil {
			return http.StatusForbidden, "", fmt.Errorf("%w (nothing written)", err)
		}
		start := time.Now()
		if err := s.Boot.WriteKernel(target, k); err != nil {
			return http.StatusInternalServerError, "", fmt.Errorf("writing slot %s's kernel: %w (slot %s, which runs, is untouched)", target, err, st.Running)
		}
		return 0, fmt.Sprintf("kernel of build %s (%d bytes) written to slot %s in %v", m.BuildID, len(k), target, time.Since(start).Round(time.Millisecond)), nil
	case "testboot":
		if st.TestBoot() {
			return http.StatusConflict, "", fmt.Errorf("the box already test-boots slot %s", st.Running)
		}
		sum, err := s.Boot.KernelHash(target)
		if err != nil {
			return http.StatusInternalServerError, "", err
		}
		if sum != m.Kernel.SHA256 {
			return http.StatusConflict, "", fmt.Errorf("slot %s's kernel is not build %s's (SHA-256 %s, the signed one %s): send it (PUT /api/v1/update/kernel) first", target, m.BuildID, sum, m.Kernel.SHA256)
		}
		if err := s.Boot.BootOnce(target); err != nil {
			return http.StatusInternalServerError, "", err
		}
		return 0, fmt.Sprintf("build %s boots once from slot %s (its kernel and root partition %d) at the next boot; slot %s after that, unless it is made permanent", m.BuildID, target, target.Partition(), st.Default), nil
	}
	return http.StatusNotFound, "", fmt.Errorf("no update step %q", name)
}
