package main

// The shared test vectors (subtools/test/vectors/*.json), which the TypeScript engines' tests read too
// (subtools/test/unit/vectors.test.ts): frame scan, sequence tracker, latency window, frame reader.

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math"
	"os"
	"sort"
	"strconv"
	"testing"
)

func loadVectors(t *testing.T, name string, into any) {
	t.Helper()
	b, err := os.ReadFile("../test/vectors/" + name + ".json")
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, into); err != nil {
		t.Fatalf("%s.json: %v", name, err)
	}
}

func TestVectorsScan(t *testing.T) {
	var v struct {
		Cases []struct {
			Name   string
			Frame  string
			Result int
			Expect map[string]any
		}
	}
	loadVectors(t, "scan", &v)
	for _, c := range v.Cases {
		t.Run(c.Name, func(t *testing.T) {
			// Older bytes past the frame, as in a reused read buffer: the scan must stop at the frame's end.
			buf := append([]byte(c.Frame), `"p":"stale","s":1,"t":2}}`...)
			var sc scan
			if r := gatewayFrame(buf[:len(c.Frame)], &sc); r != c.Result {
				t.Fatalf("result %d, want %d", r, c.Result)
			}
			if c.Result != 1 {
				return
			}
			var o any
			if !math.IsNaN(sc.o) {
				o = sc.o
			}
			got := map[string]any{"sub": string(sc.sub), "seq": float64(sc.seq), "p": string(sc.p), "end": sc.end,
				"s": float64(sc.s), "t": sc.t, "total": float64(sc.total), "o": o}
			for k, want := range c.Expect {
				if got[k] != want {
					t.Errorf("%s: got %v, want %v", k, got[k], want)
				}
			}
		})
	}
}

func TestVectorsSeq(t *testing.T) {
	var v struct {
		Window int
		Cases  []struct {
			Name    string
			FromOne bool
			Seqs    []json.RawMessage
			End     *int64
			Expect  map[string]int64
		}
	}
	loadVectors(t, "seq", &v)
	if v.Window != seqWindow {
		t.Fatalf("vectors are for a window of %d, the tracker has %d", v.Window, seqWindow)
	}
	for _, c := range v.Cases {
		t.Run(c.Name, func(t *testing.T) {
			tr := newTracker(c.FromOne)
			for _, raw := range c.Seqs {
				var r struct{ From, To, Step int64 }
				if err := json.Unmarshal(raw, &r); err == nil {
					if r.Step == 0 {
						r.Step = 1
					}
					for s := r.From; s <= r.To; s += r.Step {
						tr.see(s)
					}
					continue
				}
				n, err := strconv.ParseInt(string(raw), 10, 64)
				if err != nil {
					t.Fatal(err)
				}
				tr.see(n)
			}
			if c.End != nil {
				tr.endTotal = *c.End
			}
			got := map[string]int64{"start": tr.start, "distinct": tr.distinct, "duplicates": tr.duplicates,
				"outOfOrder": tr.outOfOrder, "late": tr.late, "expected": tr.expected(), "lost": tr.lost()}
			for k, want := range c.Expect {
				if g, ok := got[k]; !ok || g != want {
					t.Errorf("%s: got %d, want %d", k, g, want)
				}
			}
		})
	}
}

// percentile reads a snapshot's [value, count] pairs as the master's HDR histogram does
// (getValueAtPercentile): the highest value of the bucket holding the ceil(p/100 × count)-th sample, kept
// within the exact MIN and MAX.
func percentile(s snapshot, p float64) float64 {
	type bucket struct{ lo, n float64 }
	var bs []bucket
	for i := 0; i+1 < len(s.Values); i += 2 {
		bs = append(bs, bucket{s.Values[i], s.Values[i+1]})
	}
	sort.Slice(bs, func(i, j int) bool { return bs[i].lo < bs[j].lo })
	want := math.Max(1, math.Ceil(p/100*float64(s.Count)-1e-9))
	seen := 0.0
	for _, b := range bs {
		seen += b.n
		if seen >= want {
			top := float64(slotValue(slot(uint64(b.lo))+1) - 1)
			return math.Min(*s.MaxUs, math.Max(*s.MinUs, top))
		}
	}
	return math.NaN()
}

func near(got float64, want *float64) bool {
	if want == nil {
		return math.IsNaN(got)
	}
	return math.Abs(got-*want) <= math.Abs(*want)*1e-12
}

func TestVectorsStats(t *testing.T) {
	var v struct {
		Cases []struct {
			Name    string
			Samples []float64
			Expect  struct {
				Count, Clamped, Overflow     int64
				Min, Max, Mean, HarmonicMean *float64
				Percentiles                  map[string]*float64
			}
		}
	}
	loadVectors(t, "stats", &v)
	for _, c := range v.Cases {
		t.Run(c.Name, func(t *testing.T) {
			w := newWindow()
			for _, x := range c.Samples {
				w.record(x)
			}
			s := w.snapshot()
			e := c.Expect
			if s.Count != e.Count || s.Clamped != e.Clamped || s.Overflow != e.Overflow {
				t.Fatalf("count %d clamped %d overflow %d, want %d %d %d", s.Count, s.Clamped, s.Overflow, e.Count, e.Clamped, e.Overflow)
			}
			if e.Count == 0 {
				if s.MinUs != nil || s.MaxUs != nil || len(s.Values) != 0 {
					t.Fatalf("an empty window has figures: %+v", s)
				}
				return
			}
			mean, hmean := s.SumUs/float64(s.Count), float64(s.Count)/s.RecipSum
			if *s.MinUs != *e.Min || *s.MaxUs != *e.Max || !near(mean, e.Mean) || !near(hmean, e.HarmonicMean) {
				t.Fatalf("min %v max %v mean %v harmonic %v, want %v %v %v %v", *s.MinUs, *s.MaxUs, mean, hmean, *e.Min, *e.Max, *e.Mean, *e.HarmonicMean)
			}
			for p, want := range e.Percentiles {
				pf, _ := strconv.ParseFloat(p, 64)
				if got := percentile(s, pf); got != *want {
					t.Errorf("p%s: got %v, want %v", p, got, *want)
				}
			}
		})
	}
}

type wsPart struct {
	Hex  *string
	Text *string
	Fill *[2]json.RawMessage
}

func (p wsPart) bytes(t *testing.T) []byte {
	switch {
	case p.Hex != nil:
		b, err := hex.DecodeString(*p.Hex)
		if err != nil {
			t.Fatal(err)
		}
		return b
	case p.Text != nil:
		return latin1(*p.Text)
	case p.Fill != nil:
		var ch string
		var n int
		if json.Unmarshal(p.Fill[0], &ch) != nil || json.Unmarshal(p.Fill[1], &n) != nil {
			t.Fatal("bad fill")
		}
		return bytes.Repeat(latin1(ch), n)
	}
	return nil
}

func latin1(s string) []byte {
	b := make([]byte, 0, len(s))
	for _, r := range s {
		b = append(b, byte(r))
	}
	return b
}

type recorded struct {
	kind    string
	op      byte
	payload string
}

type recorder struct{ got []recorded }

func (r *recorder) message(op byte, p []byte) bool {
	r.got = append(r.got, recorded{"message", op, hex.EncodeToString(p)})
	return true
}
func (r *recorder) control(op byte, p []byte) bool {
	r.got = append(r.got, recorded{"control", op, hex.EncodeToString(p)})
	return true
}

func TestVectorsFrameReader(t *testing.T) {
	var v struct {
		Cases []struct {
			Name      string
			Stream    []wsPart
			Chunkings [][]int
			Events    []struct {
				wsPart
				Kind string
				Op   byte
			}
			Error      *int
			MaxMessage *int
		}
	}
	loadVectors(t, "ws-frames", &v)
	for _, c := range v.Cases {
		t.Run(c.Name, func(t *testing.T) {
			var stream []byte
			for _, p := range c.Stream {
				stream = append(stream, p.bytes(t)...)
			}
			var want []recorded
			for _, e := range c.Events {
				want = append(want, recorded{e.Kind, e.Op, hex.EncodeToString(e.bytes(t))})
			}
			max := maxMessage
			if c.MaxMessage != nil {
				max = *c.MaxMessage
			}
			for _, sizes := range c.Chunkings {
				rd := newFrameReader(max)
				rec := &recorder{}
				shared := make([]byte, len(stream))
				var err error
				for at, i := 0, 0; at < len(stream) && err == nil; i++ {
					n := len(stream) - at
					if len(sizes) > 0 && sizes[i%len(sizes)] < n {
						n = sizes[i%len(sizes)]
					}
					// Through one reused buffer, overwritten after each read like the worker's.
					copy(shared, stream[at:at+n])
					err = rd.feed(shared[:n], rec)
					for k := range shared[:n] {
						shared[k] = 0xee
					}
					at += n
				}
				if len(rec.got) != len(want) {
					t.Fatalf("chunks %v: %d events, want %d: %+v", sizes, len(rec.got), len(want), rec.got)
				}
				for i := range want {
					if rec.got[i] != want[i] {
						t.Fatalf("chunks %v: event %d is %+v, want %+v", sizes, i, rec.got[i], want[i])
					}
				}
				var fe *frameError
				switch {
				case c.Error == nil && err != nil:
					t.Fatalf("chunks %v: %v", sizes, err)
				case c.Error != nil && (!errors.As(err, &fe) || fe.code != *c.Error):
					t.Fatalf("chunks %v: error %v, want close code %d", sizes, err, *c.Error)
				case c.Error == nil && (len(rd.carry) != 0 || rd.fragging):
					t.Fatalf("chunks %v: bytes left over", sizes)
				}
			}
		})
	}
}
