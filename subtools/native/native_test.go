package main

import (
	"math/rand"
	"testing"
)

// The frame scan, the tracker, the latency figures and the frame reader are tested against the shared
// vectors in vectors_test.go.

// slot/slotValue mirror HDR's buckets at 1 µs and 3 digits: a bucket's lowest value maps back to it, and
// every value lies within 1/1024 above its bucket's lowest value.
func TestSlotsMatchHdrBuckets(t *testing.T) {
	for _, v := range []uint64{0, 1, 2047, 2048, 2049, 4095, 4096, 1_000_000, histHighestUs} {
		i := slot(v)
		lo := slotValue(i)
		if slot(lo) != i || lo > v || float64(v-lo) > float64(lo)/1024+1 {
			t.Fatalf("value %d: slot %d lowest %d", v, i, lo)
		}
	}
	r := rand.New(rand.NewSource(1))
	for k := 0; k < 100000; k++ {
		v := uint64(r.Int63n(histHighestUs))
		lo := slotValue(slot(v))
		if lo > v || float64(v-lo) > float64(lo)/1024+1 {
			t.Fatalf("value %d: lowest %d", v, lo)
		}
	}
}

func TestWindowExactFigures(t *testing.T) {
	w := newWindow()
	for _, v := range []float64{100, 200, 400, 0.5} {
		w.record(v)
	}
	s := w.snapshot()
	if s.Count != 4 || s.SumUs != 701 || s.Clamped != 1 || *s.MinUs != 1 || *s.MaxUs != 400 {
		t.Fatalf("snapshot %+v", s)
	}
	var n float64
	for i := 1; i < len(s.Values); i += 2 {
		n += s.Values[i]
	}
	if n != 4 {
		t.Fatalf("bucket counts add to %v", n)
	}
	w.reset()
	if s := w.snapshot(); s.Count != 0 || len(s.Values) != 0 {
		t.Fatalf("after reset %+v", s)
	}
}

func TestCmsgTimestamp(t *testing.T) {
	b := make([]byte, 32)
	b[0] = 32
	b[8] = 1   // SOL_SOCKET
	b[12] = 35 // SO_TIMESTAMPNS
	b[16] = 2  // 2 s
	b[24] = 5  // 5 ns
	if got := cmsgTimestampNs(b); got != 2_000_000_005 {
		t.Fatalf("got %d", got)
	}
	if cmsgTimestampNs(nil) != 0 {
		t.Fatal("no control message: 0")
	}
}

func TestPublisherHost(t *testing.T) {
	if publisherHost("my-host-123-1:chan") != "my-host" || safeHostID("a b") != "a_b" {
		t.Fatal(publisherHost("my-host-123-1:chan"))
	}
}
