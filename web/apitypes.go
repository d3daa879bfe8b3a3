package web

import "github.com/ncpos/ncpos/web/api"

// The API's types that other programs decode are in package api.
type (
	Summary           = api.Summary
	System            = api.System
	Interface         = api.Interface
	Daemon            = api.Daemon
	WatchdogInfo      = api.WatchdogInfo
	Segment           = api.Segment
	SegmentForwarding = api.SegmentForwarding
	BypassState       = api.BypassState
	SelfTest          = api.SelfTest
	SelfTestResult    = api.SelfTestResult
)
