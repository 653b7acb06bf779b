package main

// Latency window: exact running figures (count, Neumaier sums, min, max) plus HDR-compatible buckets
// (1 µs lowest, 3 significant digits). The buckets go to the master as [value, count] pairs of each
// bucket's lowest value, which land in the same bucket of the master's HDR histogram.

import "math/bits"

const (
	histHighestUs = 3_600_000_000
	subBuckets    = 2048
	halfBuckets   = 1024
	bucketSlots   = subBuckets + 23*halfBuckets
)

type exactSum struct{ s, c float64 }

func (e *exactSum) add(x float64) {
	t := e.s + x
	if abs(e.s) >= abs(x) {
		e.c += (e.s - t) + x
	} else {
		e.c += (x - t) + e.s
	}
	e.s = t
}
func (e *exactSum) value() float64 { return e.s + e.c }
func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

type window struct {
	count, clamped, overflow int64
	sum, recip               exactSum
	min, max                 float64
	counts                   [bucketSlots]uint64
	touched                  []int32
}

func newWindow() *window { w := &window{}; w.reset(); return w }

func slot(v uint64) int {
	if v < subBuckets {
		return int(v)
	}
	shift := bits.Len64(v) - 11
	return subBuckets + (shift-1)*halfBuckets + int(v>>uint(shift)) - halfBuckets
}

func slotValue(i int) uint64 {
	if i < subBuckets {
		return uint64(i)
	}
	k := i - subBuckets
	shift := k/halfBuckets + 1
	return uint64(k%halfBuckets+halfBuckets) << uint(shift)
}

func (w *window) record(us float64) {
	if !(us >= 1) {
		us = 1
		w.clamped++
	}
	w.count++
	w.sum.add(us)
	w.recip.add(1 / us)
	if us < w.min {
		w.min = us
	}
	if us > w.max {
		w.max = us
	}
	v := uint64(us + 0.5)
	if v > histHighestUs {
		v = histHighestUs
		w.overflow++
	}
	i := slot(v)
	if w.counts[i] == 0 {
		w.touched = append(w.touched, int32(i))
	}
	w.counts[i]++
}

func (w *window) reset() {
	for _, i := range w.touched {
		w.counts[i] = 0
	}
	w.touched = w.touched[:0]
	w.count, w.clamped, w.overflow = 0, 0, 0
	w.sum, w.recip = exactSum{}, exactSum{}
	w.min, w.max = 1e300, -1e300
}

// snapshot is subtools/src/shared/stats.ts LatencySnapshot with `values` instead of an encoded histogram.
type snapshot struct {
	Count     int64     `json:"count"`
	SumUs     float64   `json:"sumUs"`
	RecipSum  float64   `json:"recipSum"`
	MinUs     *float64  `json:"minUs"`
	MaxUs     *float64  `json:"maxUs"`
	Clamped   int64     `json:"clamped"`
	Overflow  int64     `json:"overflow"`
	Histogram string    `json:"histogram"`
	Values    []float64 `json:"values,omitempty"`
}

func (w *window) snapshot() snapshot {
	s := snapshot{Count: w.count, SumUs: w.sum.value(), RecipSum: w.recip.value(), Clamped: w.clamped, Overflow: w.overflow}
	if w.count > 0 {
		mn, mx := w.min, w.max
		s.MinUs, s.MaxUs = &mn, &mx
		s.Values = make([]float64, 0, 2*len(w.touched))
		for _, i := range w.touched {
			s.Values = append(s.Values, float64(slotValue(int(i))), float64(w.counts[i]))
		}
	}
	return s
}
