package update

import (
	"context"
	"time"

	"github.com/ncpos/ncpos/web/api"
)

// Segments reads statusd's /api/v1/segments.
func (c *Client) Segments(ctx context.Context) ([]api.Segment, error) {
	var segs struct {
		Segments []api.Segment `json:"segments"`
	}
	if err := c.getJSON(ctx, "api/v1/segments", &segs); err != nil {
		return nil, err
	}
	return segs.Segments, nil
}

// reportedSegments reads the segments, waiting up to patience for
// forwarderd to report every one of them (statusd shows a segment without
// forwarderd's word while forwarderd is slow to answer): the baseline of an
// update must be what the segments do, not a missed sample.
func (c *Client) reportedSegments(ctx context.Context, patience time.Duration) ([]api.Segment, error) {
	deadline := time.Now().Add(patience)
	for {
		segs, err := c.Segments(ctx)
		if err != nil {
			return nil, err
		}
		missing := false
		for _, s := range segs {
			missing = missing || s.Forwarding == nil
		}
		if !missing || time.Now().After(deadline) {
			return segs, nil
		}
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(time.Second):
		}
	}
}
