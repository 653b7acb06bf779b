package main

// Loss, duplicate and order accounting per (client, publisher): subtools/src/seq-tracker.ts, same rules.

const seqWindow = 256

type tracker struct {
	start, hi, distinct, duplicates, outOfOrder, late, endTotal int64
	bits                                                        [seqWindow / 32]uint32
}

func newTracker(fromOne bool) *tracker {
	t := &tracker{endTotal: -1}
	if fromOne {
		t.start = 1
	}
	return t
}

func (t *tracker) see(seq int64) {
	if t.start == 0 {
		t.start = seq
		t.hi = seq - 1
	}
	if seq > t.hi {
		from := t.hi + 1
		if seq-t.hi >= seqWindow {
			from = seq - seqWindow + 1
		}
		for s := from; s < seq; s++ {
			t.clear(s)
		}
		t.set(seq)
		t.hi = seq
		t.distinct++
		return
	}
	if seq < t.start {
		t.start = seq
		t.late++
	} else if seq > t.hi-seqWindow {
		if t.isSet(seq) {
			t.duplicates++
			return
		}
		t.set(seq)
	} else {
		t.late++
	}
	t.outOfOrder++
	t.distinct++
}

func (t *tracker) expected() int64 {
	last := t.hi
	if t.endTotal >= 0 && t.endTotal > last {
		last = t.endTotal
	}
	first := t.start
	if first == 0 {
		first = 1
	}
	if last-first+1 < 0 {
		return 0
	}
	return last - first + 1
}

func (t *tracker) lost() int64 {
	if d := t.expected() - t.distinct; d > 0 {
		return d
	}
	return 0
}

func (t *tracker) set(s int64)   { i := s & (seqWindow - 1); t.bits[i>>5] |= 1 << uint(i&31) }
func (t *tracker) clear(s int64) { i := s & (seqWindow - 1); t.bits[i>>5] &^= 1 << uint(i&31) }
func (t *tracker) isSet(s int64) bool {
	i := s & (seqWindow - 1)
	return t.bits[i>>5]&(1<<uint(i&31)) != 0
}
