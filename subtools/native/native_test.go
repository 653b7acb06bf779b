package main

import (
	"math"
	"math/rand"
	"testing"
)

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

// The same rules as subtools/src/seq-tracker.ts.
func TestTracker(t *testing.T) {
	tr := newTracker(true)
	for _, s := range []int64{1, 2, 4, 3, 3, 6} {
		tr.see(s)
	}
	tr.endTotal = 7
	if tr.distinct != 5 || tr.duplicates != 1 || tr.outOfOrder != 1 || tr.expected() != 7 || tr.lost() != 2 {
		t.Fatalf("%+v expected %d lost %d", tr, tr.expected(), tr.lost())
	}
	late := newTracker(false)
	late.see(100)
	late.see(101)
	if late.expected() != 2 || late.lost() != 0 {
		t.Fatalf("joining late is not loss: %+v", late)
	}
}

func TestGatewayFrame(t *testing.T) {
	var sc scan
	f := []byte(`{"op":"msg","channel":"a.b","sub":"a.*","seq":42,"ts":1700000000000,"data":{"p":"h-1-1:a.b","s":7,"t":1700000000000123,"o":-15,"x":"pad"}}`)
	if gatewayFrame(f, &sc) != 1 || string(sc.sub) != "a.*" || sc.seq != 42 || string(sc.p) != "h-1-1:a.b" || sc.s != 7 || sc.t != 1700000000000123 || sc.o != -15 || sc.end {
		t.Fatalf("fast path: %+v", sc)
	}
	end := []byte(`{"op":"msg","channel":"a.b","sub":"a.b","seq":43,"ts":1,"data":{"p":"h-1-1:a.b","end":true,"total":9}}`)
	if gatewayFrame(end, &sc) != 1 || !sc.end || sc.total != 9 || !math.IsNaN(sc.o) {
		t.Fatalf("end marker: %+v", sc)
	}
	// Keys in another order go through encoding/json.
	other := []byte(`{"channel":"c","op":"msg","seq":5,"sub":"c","data":{"t":11,"s":3,"p":"x"}}`)
	if gatewayFrame(other, &sc) != 1 || sc.seq != 5 || sc.s != 3 || sc.t != 11 || string(sc.p) != "x" {
		t.Fatalf("fallback: %+v", sc)
	}
	if gatewayFrame([]byte(`{"op":"ok","id":1,"epoch":"e"}`), &sc) != 0 {
		t.Fatal("a control frame is 0")
	}
	if gatewayFrame([]byte(`{"op":"msg","channel":"c","sub":"c","seq":1,"data":{"hello":1}}`), &sc) != -1 {
		t.Fatal("a msg without a benchmark payload is -1")
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
