package main

// The sub-cluster master's protocol (subtools/src/ipc.ts), as JSON lines: ToWorker on stdin, FromWorker on
// stdout. Field names are the TypeScript ones.

import (
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"
)

type hostPlan struct {
	Host       string    `json:"host"`
	Sources    []*string `json:"sources"`
	FirstPort  *int      `json:"firstPort"`
	ServerPort *int      `json:"serverPort"`
}

// ipBindAddressNoPort is Linux's IP_BIND_ADDRESS_NO_PORT (since 4.2; not in package syscall).
const ipBindAddressNoPort = 24

type addressPlan struct {
	Hosts []hostPlan `json:"hosts"`
}

type subOptions struct {
	Processes         int             `json:"processes"`
	ClientsPerProcess int             `json:"clientsPerProcess"`
	Port              int             `json:"port"`
	Path              string          `json:"path"`
	Channels          []string        `json:"channels"`
	From              json.RawMessage `json:"from"`
	Expect            *int64          `json:"expect"`
	Ramp              float64         `json:"ramp"`
	MaxPending        int             `json:"maxPending"`
}

type toWorker struct {
	Type          string      `json:"type"`
	Index         int         `json:"index"`
	Opts          subOptions  `json:"opts"`
	Plan          addressPlan `json:"plan"`
	ClockOffsetUs *float64    `json:"clockOffsetUs"`
}

type workerCounts struct {
	Planned         int   `json:"planned"`
	Clients         int   `json:"clients"`
	EverConnected   int   `json:"everConnected"`
	PeakConnected   int   `json:"peakConnected"`
	Received        int64 `json:"received"`
	Distinct        int64 `json:"distinct"`
	Expected        int64 `json:"expected"`
	Lost            int64 `json:"lost"`
	Duplicated      int64 `json:"duplicated"`
	OutOfOrder      int64 `json:"outOfOrder"`
	Late            int64 `json:"late"`
	EndMarkers      int64 `json:"endMarkers"`
	ConnectFailures int64 `json:"connectFailures"`
	Reconnects      int64 `json:"reconnects"`
	SubErrors       int64 `json:"subErrors"`
	BadFrames       int64 `json:"badFrames"`
}

type publisherClock struct {
	ID           string   `json:"id"`
	Host         string   `json:"host"`
	SameHost     bool     `json:"sameHost"`
	OffsetUs     *float64 `json:"offsetUs"`
	CorrectionUs float64  `json:"correctionUs"`
	Corrected    bool     `json:"corrected"`
}

// toolDelay: how long after the kernel stored a chunk this process read it (user-space receive − kernel).
type toolDelay struct {
	Count int64   `json:"count"`
	SumUs float64 `json:"sumUs"`
	MaxUs float64 `json:"maxUs"`
}

type fromWorker struct {
	Type           string           `json:"type"`
	Index          int              `json:"index"`
	Counts         workerCounts     `json:"counts"`
	Failures       map[string]int64 `json:"failures"`
	NeverConnected map[string]int64 `json:"neverConnected"`
	Publishers     []publisherClock `json:"publishers"`
	Window         snapshot         `json:"window"`
	CPUPct         float64          `json:"cpuPct"`
	FirstError     *string          `json:"firstError"`
	RecvClock      string           `json:"recvClock"`
	ToolDelay      toolDelay        `json:"toolDelay"`
	// tick only
	Connected *int     `json:"connected,omitempty"`
	Started   *int     `json:"started,omitempty"`
	Done      *bool    `json:"done,omitempty"`
	IdleMs    *float64 `json:"idleMs,omitempty"`
	// final only
	Crashed string `json:"crashed,omitempty"`
}

// resolveV4 turns a plan's host into an IPv4 address.
func resolveV4(host string) ([4]byte, error) {
	var out [4]byte
	ips, err := net.LookupIP(host)
	if err != nil {
		return out, err
	}
	for _, ip := range ips {
		if v4 := ip.To4(); v4 != nil {
			copy(out[:], v4)
			return out, nil
		}
	}
	return out, fmt.Errorf("%s has no IPv4 address (the native engine speaks IPv4)", host)
}

// errnoName: the short code sub-cluster counts failures by (ECONNREFUSED, EADDRNOTAVAIL, …).
func errnoName(err error) string {
	var e syscall.Errno
	if !errors.As(err, &e) {
		return "error"
	}
	switch e {
	case syscall.ECONNREFUSED:
		return "ECONNREFUSED"
	case syscall.EADDRNOTAVAIL:
		return "EADDRNOTAVAIL"
	case syscall.EADDRINUSE:
		return "EADDRINUSE"
	case syscall.EMFILE:
		return "EMFILE"
	case syscall.ENFILE:
		return "ENFILE"
	case syscall.ENOBUFS:
		return "ENOBUFS"
	case syscall.ETIMEDOUT:
		return "ETIMEDOUT"
	case syscall.ECONNRESET:
		return "ECONNRESET"
	case syscall.EPIPE:
		return "EPIPE"
	case syscall.EHOSTUNREACH:
		return "EHOSTUNREACH"
	case syscall.ENETUNREACH:
		return "ENETUNREACH"
	}
	return "E" + strings.ToUpper(strings.ReplaceAll(e.Error(), " ", "_"))
}
