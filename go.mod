module github.com/ncpos/ncpos

go 1.26.8

require (
	github.com/asavie/xdp v0.3.3
	github.com/aymanbagabas/go-udiff v0.4.2
	github.com/beevik/ntp v1.6.0
	github.com/chromedp/cdproto v0.160.1
	github.com/chromedp/chromedp v0.23.1
	github.com/cilium/ebpf v0.22.0
	github.com/gokrazy/gokrazy v0.0.0-20260418085648-c38c3134b8a7
	github.com/google/renameio/v2 v2.0.0
	github.com/gosnmp/gosnmp v1.47.0
	github.com/klauspost/compress v1.20.1
	github.com/mdlayher/packet v1.1.2
	github.com/pelletier/go-toml/v2 v2.4.3
	github.com/prometheus/client_golang v1.25.0
	github.com/prometheus/client_model v0.6.3
	github.com/prometheus/common v0.72.0
	github.com/safchain/ethtool v0.7.0
	github.com/schollz/progressbar/v3 v3.19.1
	github.com/vishvananda/netlink v1.3.1
	github.com/vishvananda/netns v0.0.5
	golang.org/x/crypto v0.59.0
	golang.org/x/net v0.62.0
	golang.org/x/sys v0.50.0
	golang.org/x/time v0.16.0
	layeh.com/radius v0.0.0-20231213012653-1006025d24f8
)

require (
	github.com/beorn7/perks v1.0.1 // indirect
	github.com/cespare/xxhash/v2 v2.3.0 // indirect
	github.com/go-json-experiment/json v0.0.0-20260213210345-44df1a37e875 // indirect
	github.com/gokrazy/internal v0.0.0-20240629150625-a0f1dee26ef5 // indirect
	github.com/google/gopacket v1.1.19 // indirect
	github.com/josharian/native v1.1.0 // indirect
	github.com/kenshaw/evdev v0.1.0 // indirect
	github.com/mdlayher/socket v0.5.1 // indirect
	github.com/mdlayher/watchdog v0.0.0-20221003142519-49be0df7b3b5 // indirect
	github.com/mitchellh/colorstring v0.0.0-20190213212951-d06e56a500db // indirect
	github.com/munnerz/goautoneg v0.0.0-20191010083416-a7dc8b61c822 // indirect
	github.com/prometheus/procfs v0.22.0 // indirect
	github.com/rivo/uniseg v0.4.7 // indirect
	github.com/rtr7/dhcp4 v0.0.0-20220302171438-18c84d089b46 // indirect
	github.com/spf13/pflag v1.0.10 // indirect
	golang.org/x/sync v0.22.0 // indirect
	golang.org/x/term v0.48.0 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
)

tool (
	github.com/cilium/ebpf/cmd/bpf2go
	github.com/gokrazy/gokrazy/cmd/dhcp
)
