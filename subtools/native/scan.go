package main

// Reads the benchmark payload out of a gateway `msg` frame without decoding it (subtools/src/scan-bytes.ts):
//   {"op":"msg","channel":"…","sub":"…","seq":N,"ts":T,"data":{"p":"<id>","s":N,"t":µs[,"o":µs],…}}
//   … "data":{"p":"<id>","end":true,"total":N[,"o":µs]}
// Anything laid out otherwise goes through encoding/json.

import (
	"bytes"
	"encoding/json"
	"math"
	"strconv"
)

type scan struct {
	sub   []byte
	seq   int64
	p     []byte
	s     int64
	t, o  float64
	end   bool
	total int64
}

var (
	kOpMsg    = []byte(`{"op":"msg"`)
	kOpMsgAny = []byte(`"op":"msg"`)
	kSub      = []byte(`"sub":"`)
	kSeq      = []byte(`"seq":`)
	kData     = []byte(`"data":`)
	kP        = []byte(`"p":"`)
	kS        = []byte(`","s":`)
	kT        = []byte(`,"t":`)
	kO        = []byte(`,"o":`)
	kEnd      = []byte(`","end":true,"total":`)
)

// readInt reads a decimal integer at b[i:]; ok is false when there is no digit or a fraction follows.
func readInt(b []byte, i int) (v int64, next int, ok bool) {
	neg := false
	if i < len(b) && b[i] == '-' {
		neg = true
		i++
	}
	from := i
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		v = v*10 + int64(b[i]-'0')
		i++
	}
	if i == from || (i < len(b) && (b[i] == '.' || b[i] == 'e' || b[i] == 'E')) {
		return 0, i, false
	}
	if neg {
		v = -v
	}
	return v, i, true
}

// readNum reads a JSON number at b[i:]: digits on the usual path, strconv for a fraction or an exponent
// (the payload's `t` and `o` may carry one); ok is false when there is no number.
func readNum(b []byte, i int) (v float64, next int, ok bool) {
	n, next, ok := readInt(b, i)
	if ok {
		return float64(n), next, true
	}
	if next == i || (next == i+1 && b[i] == '-') {
		return 0, next, false
	}
	k := next
	for k < len(b) && b[k] != ',' && b[k] != '}' && b[k] != ']' {
		k++
	}
	v, err := strconv.ParseFloat(string(b[i:k]), 64)
	return v, k, err == nil
}

// gatewayFrame: 1 a benchmark msg (fields in sc), 0 not a msg (a control frame), -1 a msg that is not ours.
func gatewayFrame(b []byte, sc *scan) int {
	if !bytes.HasPrefix(b, kOpMsg) {
		if bytes.Index(b, kOpMsgAny) < 0 {
			return 0
		}
		return parsed(b, sc)
	}
	i := bytes.Index(b, kSub)
	if i < 0 {
		return parsed(b, sc)
	}
	i += len(kSub)
	j := bytes.IndexByte(b[i:], '"')
	if j < 0 {
		return parsed(b, sc)
	}
	sc.sub = b[i : i+j]
	i += j
	k := bytes.Index(b[i:], kSeq)
	if k < 0 {
		return parsed(b, sc)
	}
	seq, n, ok := readInt(b, i+k+len(kSeq))
	if !ok {
		return parsed(b, sc)
	}
	sc.seq = seq
	d := bytes.Index(b[n:], kData)
	if d < 0 {
		return parsed(b, sc)
	}
	d += n + len(kData)
	pi := bytes.Index(b[d:], kP)
	if pi < 0 {
		return parsed(b, sc)
	}
	ps := d + pi + len(kP)
	pe := bytes.IndexByte(b[ps:], '"')
	if pe < 0 {
		return parsed(b, sc)
	}
	sc.p = b[ps : ps+pe]
	i = ps + pe
	sc.o = math.NaN()
	if bytes.HasPrefix(b[i:], kS) {
		var ok1, ok2 bool
		sc.s, i, ok1 = readInt(b, i+len(kS))
		if !ok1 || !bytes.HasPrefix(b[i:], kT) {
			return parsed(b, sc)
		}
		sc.t, i, ok2 = readNum(b, i+len(kT))
		if !ok2 {
			return parsed(b, sc)
		}
		sc.end = false
	} else if bytes.HasPrefix(b[i:], kEnd) {
		var ok1 bool
		sc.total, i, ok1 = readInt(b, i+len(kEnd))
		if !ok1 {
			return parsed(b, sc)
		}
		sc.end, sc.s, sc.t = true, 0, 0
	} else {
		return parsed(b, sc)
	}
	if bytes.HasPrefix(b[i:], kO) {
		if o, _, ok := readNum(b, i+len(kO)); ok {
			sc.o = o
		}
	}
	return 1
}

type jsonFrame struct {
	Op   string          `json:"op"`
	Sub  string          `json:"sub"`
	Seq  *float64        `json:"seq"`
	Data json.RawMessage `json:"data"`
}

type jsonPayload struct {
	P     *string  `json:"p"`
	S     *float64 `json:"s"`
	T     *float64 `json:"t"`
	O     *float64 `json:"o"`
	End   bool     `json:"end"`
	Total *float64 `json:"total"`
}

func parsed(b []byte, sc *scan) int {
	var f jsonFrame
	if json.Unmarshal(b, &f) != nil {
		return -1 // only frames that say "op":"msg" come here
	}
	if f.Op != "msg" {
		return 0
	}
	var p jsonPayload
	if json.Unmarshal(f.Data, &p) != nil || p.P == nil {
		return -1
	}
	sc.sub = []byte(f.Sub)
	sc.seq = -1
	if f.Seq != nil {
		sc.seq = int64(*f.Seq)
	}
	sc.p = []byte(*p.P)
	sc.o = math.NaN()
	if p.O != nil {
		sc.o = *p.O
	}
	if p.End && p.Total != nil {
		sc.end, sc.total, sc.s, sc.t = true, int64(*p.Total), 0, 0
		return 1
	}
	if p.S == nil || p.T == nil {
		return -1
	}
	sc.end, sc.s, sc.t = false, int64(*p.S), *p.T
	return 1
}
