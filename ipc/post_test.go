package ipc

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"testing"
	"time"
)

func TestPost(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	mux := Handler(AlwaysLive("echod"), func() any { return nil }, nil)
	mux.HandleFunc("POST /echo", func(w http.ResponseWriter, r *http.Request) {
		var in map[string]string
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in["say"] == "" {
			http.Error(w, "want a say", http.StatusBadRequest)
			return
		}
		WriteJSON(w, map[string]string{"heard": in["say"]})
	})
	mux.HandleFunc("DELETE /echo", func(w http.ResponseWriter, r *http.Request) {
		WriteJSON(w, map[string]string{"deleted": r.URL.Query().Get("what")})
	})
	go Serve(ctx, dir, "echod", mux)
	c := NewClient(dir, "echod", time.Second)
	for deadline := time.Now().Add(5 * time.Second); c.Live(ctx) != nil; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("server did not come up")
		}
	}

	var out map[string]string
	if err := c.Post(ctx, "/echo", map[string]string{"say": "hi"}, &out); err != nil || out["heard"] != "hi" {
		t.Fatalf("Post = %v, %v", out, err)
	}
	if err := c.Delete(ctx, "/echo?what=override", &out); err != nil || out["deleted"] != "override" {
		t.Fatalf("Delete = %v, %v", out, err)
	}
	err := c.Post(ctx, "/echo", map[string]string{}, nil)
	var se *StatusError
	if !errors.As(err, &se) || se.Code != http.StatusBadRequest || se.Message != "want a say" {
		t.Fatalf("Post with a bad request = %v, want a 400 StatusError with the reason", err)
	}
	if NotRunning(err) {
		t.Fatal("NotRunning of an answered request")
	}
	if err := NewClient(dir, "nobody", time.Second).Post(ctx, "/echo", nil, nil); !NotRunning(err) {
		t.Fatalf("Post to a missing daemon = %v, want NotRunning", err)
	}
}
