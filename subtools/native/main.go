// sub-native: a sub-cluster process for the gateway target, outside Node. It speaks the master's protocol
// (subtools/src/ipc.ts) as JSON lines on stdin/stdout, holds its clients on one epoll loop, and takes each
// chunk's receive time from the kernel (SO_TIMESTAMPNS), so the latency it reports is when the bytes
// reached this host, not when this process got round to reading them. Built by scripts/setup.sh into
// .tools/bin/sub-native; `sub-cluster --engine native` runs it.
package main

import (
	"bufio"
	"container/heap"
	"encoding/json"
	"fmt"
	"math"
	"math/rand"
	"os"
	"strings"
	"syscall"
	"time"
)

// defaultMaxPending: connection attempts in flight per process when the options give none (--max-pending).
const defaultMaxPending = 256
const closeBound = 5 * time.Second

func nowNs() int64 { return time.Now().UnixNano() }

type retry struct {
	due int64
	c   *client
}
type retryHeap []retry

func (h retryHeap) Len() int           { return len(h) }
func (h retryHeap) Less(i, j int) bool { return h[i].due < h[j].due }
func (h retryHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *retryHeap) Push(x any)        { *h = append(*h, x.(retry)) }
func (h *retryHeap) Pop() any          { o := *h; x := o[len(o)-1]; *h = o[:len(o)-1]; return x }

type worker struct {
	index     int
	opts      subOptions
	plan      addressPlan
	offsetUs  *float64
	ep        int
	byFd      map[int]*client
	clients   []*client
	hostNames map[[4]byte]string
	hostAddrs []([4]byte)
	rbuf, oob []byte
	sc        scan
	sink      clientSink
	win       *window
	retries   retryHeap
	gateQueue []*client
	inFlight  int
	stopping  bool
	myHost    string

	connectedNow, peak                                                      int
	received, endMarkers, badFrames, connectFailures, reconnects, subErrors int64
	failures                                                                map[string]int64
	firstError                                                              *string
	lastRecvUs                                                              float64
	delay                                                                   toolDelay
	userClock                                                               int64

	pubs     []publisherClock
	pubIndex map[string]int
	lastPub  int
	lastP    []byte

	lastRu   syscall.Rusage
	lastRuAt int64
}

func main() {
	lines := make(chan []byte, 4)
	go func() {
		sc := bufio.NewScanner(os.Stdin)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			lines <- append([]byte(nil), sc.Bytes()...)
		}
		close(lines)
	}()
	out := bufio.NewWriterSize(os.Stdout, 1<<16)
	send := func(m *fromWorker) {
		b, _ := json.Marshal(m)
		out.Write(b)
		out.WriteByte('\n')
		out.Flush()
	}
	var w *worker
	for line := range lines {
		var m toWorker
		if err := json.Unmarshal(line, &m); err != nil {
			fmt.Fprintf(os.Stderr, "sub-native: bad message from the master: %v\n", err)
			os.Exit(2)
		}
		if m.Type == "start" {
			var err error
			w, err = newWorker(m)
			if err != nil {
				fmt.Fprintf(os.Stderr, "sub-native: %v\n", err)
				os.Exit(2)
			}
			break
		}
		if m.Type == "stop" {
			os.Exit(0)
		}
	}
	if w == nil {
		os.Exit(0)
	}
	w.run(lines, send)
}

func newWorker(m toWorker) (*worker, error) {
	ep, err := syscall.EpollCreate1(syscall.EPOLL_CLOEXEC)
	if err != nil {
		return nil, err
	}
	host, _ := os.Hostname()
	w := &worker{
		index: m.Index, opts: m.Opts, plan: m.Plan, offsetUs: m.ClockOffsetUs, ep: ep,
		byFd: map[int]*client{}, hostNames: map[[4]byte]string{}, rbuf: make([]byte, 256*1024), oob: make([]byte, 128),
		win: newWindow(), failures: map[string]int64{}, pubs: []publisherClock{}, pubIndex: map[string]int{}, lastPub: -1, myHost: safeHostID(host),
	}
	w.sink.w = w
	if w.opts.Path == "" {
		w.opts.Path = "/ws"
	}
	for _, h := range m.Plan.Hosts {
		a, err := resolveV4(h.Host)
		if err != nil {
			return nil, err
		}
		w.hostAddrs = append(w.hostAddrs, a)
		w.hostNames[a] = h.Host
	}
	if len(w.hostAddrs) == 0 {
		return nil, fmt.Errorf("the address plan has no host")
	}
	syscall.Getrusage(syscall.RUSAGE_SELF, &w.lastRu)
	w.lastRuAt = nowNs()
	return w, nil
}

// newClient places client i of this process as addressOf (subtools/src/addresses.ts) does: host, source
// address and, when the plan has them, a source port outside the ephemeral range.
func (w *worker) newClient(i int) *client {
	g := w.index*w.opts.ClientsPerProcess + i
	H := len(w.plan.Hosts)
	hp := w.plan.Hosts[g%H]
	c := &client{idx: i, fd: -1, host: w.hostAddrs[g%H], reader: newFrameReader(maxMessage), lastSeq: make([]int64, len(w.opts.Channels))}
	for k := range c.lastSeq {
		c.lastSeq[k] = -1
	}
	k := g / H
	S := len(hp.Sources)
	if S == 0 || hp.Sources[k%S] == nil {
		return c
	}
	if a, err := resolveV4(*hp.Sources[k%S]); err == nil {
		c.local = &a
	}
	if hp.FirstPort == nil {
		return c
	}
	port := *hp.FirstPort + k/S
	if hp.ServerPort != nil && port >= *hp.ServerPort {
		port++
	}
	c.localPort = port
	return c
}

// maxPending is how many connection attempts may be in flight at once in this process.
func (w *worker) maxPending() int {
	if w.opts.MaxPending > 0 {
		return w.opts.MaxPending
	}
	return defaultMaxPending
}

func (w *worker) enterGate(c *client) {
	if w.inFlight < w.maxPending() {
		w.inFlight++
		w.connect(c)
	} else {
		w.gateQueue = append(w.gateQueue, c)
	}
}

func (w *worker) leaveGate(c *client) {
	if !c.inGate {
		return
	}
	c.inGate = false
	for len(w.gateQueue) > 0 {
		next := w.gateQueue[0]
		w.gateQueue = w.gateQueue[1:]
		if next.stopping {
			continue
		}
		w.connect(next)
		return
	}
	w.inFlight--
}

// closed: every end of a connection, opened or not, comes here once.
func (w *worker) closed(c *client, opened bool, reason, msg string) {
	w.leaveGate(c)
	if c.subscribed {
		c.subscribed = false
		w.connectedNow--
	}
	if !opened {
		c.lastFailure = reason
		w.connectFailures++
		w.failures[reason]++
		if w.firstError == nil {
			w.firstError = &msg
		}
	}
	if c.stopping || w.stopping {
		return
	}
	if opened {
		w.reconnects++
	}
	heap.Push(&w.retries, retry{due: nowNs() + int64(retryDelayMs(c.attempt, reason)*1e6), c: c})
	c.attempt++
}

func retryDelayMs(attempt int, reason string) float64 {
	switch reason {
	case "EADDRNOTAVAIL", "EADDRINUSE", "EMFILE", "ENFILE", "ENOBUFS":
		return 5000 + rand.Float64()*5000
	}
	if attempt > 10 {
		attempt = 10
	}
	base := math.Min(5000, 100*math.Pow(2, float64(attempt)))
	return base/2 + rand.Float64()*base/2
}

func (w *worker) markSubscribed(c *client) {
	c.attempt = 0
	if !c.subscribed {
		c.subscribed = true
		c.everSubscribed = true
		w.connectedNow++
		if w.connectedNow > w.peak {
			w.peak = w.connectedNow
		}
	}
}

func safeHostID(h string) string {
	b := []byte(h)
	for i, ch := range b {
		ok := ch >= 'A' && ch <= 'Z' || ch >= 'a' && ch <= 'z' || ch >= '0' && ch <= '9' || strings.IndexByte("._:@-", ch) >= 0
		if !ok {
			b[i] = '_'
		}
	}
	return string(b)
}

func publisherHost(id string) string {
	head := id
	if i := strings.IndexByte(id, ':'); i >= 0 {
		head = id[:i]
	}
	a := strings.LastIndexByte(head, '-')
	b := -1
	if a > 0 {
		b = strings.LastIndexByte(head[:a], '-')
	}
	if b > 0 {
		return head[:b]
	}
	return head
}

func (w *worker) publisher() int {
	p := w.sc.p
	if w.lastPub >= 0 && string(p) == string(w.lastP) {
		return w.lastPub
	}
	id := string(p)
	n, ok := w.pubIndex[id]
	if !ok {
		n = len(w.pubs)
		w.pubIndex[id] = n
		host := publisherHost(id)
		w.pubs = append(w.pubs, publisherClock{ID: id, Host: host, SameHost: host == w.myHost})
		if !math.IsNaN(w.sc.o) {
			w.learnOffset(&w.pubs[n], w.sc.o)
		}
	}
	w.lastPub = n
	w.lastP = append(w.lastP[:0], p...)
	return n
}

func (w *worker) learnOffset(pc *publisherClock, o float64) {
	pc.OffsetUs = &o
	if pc.SameHost || w.offsetUs == nil {
		return
	}
	pc.CorrectionUs = *w.offsetUs - o
	pc.Corrected = true
}

// account: one benchmark message (fields in w.sc) received by c at recvUs.
func (w *worker) account(c *client, recvUs float64) {
	sc := &w.sc
	pub := w.publisher()
	for len(c.trackers) <= pub {
		c.trackers = append(c.trackers, nil)
	}
	tr := c.trackers[pub]
	if tr == nil {
		tr = newTracker(string(w.opts.From) == `"all"`)
		c.trackers[pub] = tr
	}
	w.lastRecvUs = recvUs
	if sc.end {
		tr.endTotal = sc.total
		w.endMarkers++
	} else {
		pc := &w.pubs[pub]
		if pc.OffsetUs == nil && !math.IsNaN(sc.o) {
			w.learnOffset(pc, sc.o)
		}
		w.received++
		w.win.record(recvUs - sc.t + pc.CorrectionUs)
		tr.see(sc.s)
	}
	if sc.seq >= 0 {
		i := 0
		if len(w.opts.Channels) > 1 {
			i = -1
			for k, ch := range w.opts.Channels {
				if ch == string(sc.sub) {
					i = k
					break
				}
			}
		}
		if i >= 0 && sc.seq > c.lastSeq[i] {
			c.lastSeq[i] = sc.seq
		}
	}
}

func (w *worker) done() bool {
	if len(w.clients) < w.opts.ClientsPerProcess {
		return false
	}
	any := false
	for _, c := range w.clients {
		if !c.everSubscribed {
			continue
		}
		any = true
		if w.opts.Expect != nil {
			var d int64
			for _, t := range c.trackers {
				if t != nil {
					d += t.distinct
				}
			}
			if d < *w.opts.Expect {
				return false
			}
		} else {
			ended := false
			for _, t := range c.trackers {
				if t != nil {
					ended = true
					if t.endTotal < 0 {
						return false
					}
				}
			}
			if !ended {
				return false
			}
		}
	}
	return any
}

func (w *worker) counts() workerCounts {
	c := workerCounts{Planned: w.opts.ClientsPerProcess, Clients: len(w.clients), PeakConnected: w.peak, Received: w.received,
		EndMarkers: w.endMarkers, ConnectFailures: w.connectFailures, Reconnects: w.reconnects, SubErrors: w.subErrors, BadFrames: w.badFrames}
	for _, cl := range w.clients {
		if cl.everSubscribed {
			c.EverConnected++
		}
		var distinct, expected, lost int64
		for _, t := range cl.trackers {
			if t == nil {
				continue
			}
			distinct += t.distinct
			expected += t.expected()
			lost += t.lost()
			c.Duplicated += t.duplicates
			c.OutOfOrder += t.outOfOrder
			c.Late += t.late
		}
		c.Distinct += distinct
		if w.opts.Expect != nil {
			c.Expected += *w.opts.Expect
			if d := *w.opts.Expect - distinct; d > 0 {
				c.Lost += d
			}
		} else {
			c.Expected += expected
			c.Lost += lost
		}
	}
	if w.opts.Expect != nil {
		un := int64(w.opts.ClientsPerProcess - len(w.clients))
		c.Expected += un * *w.opts.Expect
		c.Lost += un * *w.opts.Expect
	}
	return c
}

func (w *worker) cpuPct() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	now := nowNs()
	used := (ru.Utime.Nano() + ru.Stime.Nano()) - (w.lastRu.Utime.Nano() + w.lastRu.Stime.Nano())
	wall := now - w.lastRuAt
	w.lastRu, w.lastRuAt = ru, now
	if wall <= 0 {
		return 0
	}
	return float64(used) / float64(wall) * 100
}

func (w *worker) report(typ string) *fromWorker {
	never := map[string]int64{}
	for _, c := range w.clients {
		if c.everSubscribed {
			continue
		}
		why := c.lastFailure
		if why == "" {
			why = "pending"
		}
		never[why]++
	}
	clock := "kernel"
	if w.userClock > 0 {
		clock = "user"
	}
	// Marshalled by the caller before anything else runs: the worker's own maps and slices need no copy.
	m := &fromWorker{Type: typ, Index: w.index, Counts: w.counts(), Failures: w.failures, NeverConnected: never,
		Publishers: w.pubs, Window: w.win.snapshot(), CPUPct: w.cpuPct(), FirstError: w.firstError,
		RecvClock: clock, ToolDelay: w.delay}
	w.win.reset()
	return m
}

func (w *worker) run(lines <-chan []byte, send func(*fromWorker)) {
	t0 := nowNs()
	perProcessRate := 0.0
	if w.opts.Ramp > 0 && w.opts.Processes > 0 {
		perProcessRate = w.opts.Ramp / float64(w.opts.Processes)
	}
	nextTick := t0 + 1e9
	evs := make([]syscall.EpollEvent, 1024)
	for {
		// Ramp: open clients as the rate allows, or as the gate has room.
		if len(w.clients) < w.opts.ClientsPerProcess {
			allowed := math.MaxInt
			room := math.MaxInt
			if perProcessRate > 0 {
				allowed = int(float64(nowNs()-t0)/1e9*perProcessRate) + 1
			} else {
				room = w.maxPending()*2 - len(w.gateQueue)
			}
			for opened := 0; len(w.clients) < w.opts.ClientsPerProcess && len(w.clients) < allowed && opened < room; opened++ {
				c := w.newClient(len(w.clients))
				w.clients = append(w.clients, c)
				w.enterGate(c)
			}
		}
		now := nowNs()
		for len(w.retries) > 0 && w.retries[0].due <= now {
			r := heap.Pop(&w.retries).(retry)
			if !r.c.stopping {
				r.c.closeCode = 0
				w.enterGate(r.c)
			}
		}
		if now >= nextTick {
			nextTick = now + 1e9
			for _, c := range w.clients {
				if (c.state == stConnecting || c.state == stUpgrading) && now > c.deadline {
					w.fail(c, "ETIMEDOUT", "connect and upgrade took over 10000 ms")
				}
			}
			idle := -1.0
			if w.lastRecvUs > 0 {
				idle = (float64(now)/1000 - w.lastRecvUs) / 1000
			}
			conn, started, done := w.connectedNow, len(w.clients), w.done()
			m := w.report("tick")
			m.Connected, m.Started, m.Done, m.IdleMs = &conn, &started, &done, &idle
			send(m)
		}
		select {
		case line, ok := <-lines:
			var m toWorker
			if !ok || (json.Unmarshal(line, &m) == nil && m.Type == "stop") {
				// The report goes first: whatever happens while closing, the master has the counts.
				send(w.report("final"))
				w.closeAll(evs)
				os.Exit(0)
			}
		default:
		}
		n, err := syscall.EpollWait(w.ep, evs, 10)
		if err != nil && err != syscall.EINTR {
			fmt.Fprintf(os.Stderr, "sub-native: epoll_wait: %v\n", err)
			send(w.report("final"))
			os.Exit(1)
		}
		for i := 0; i < n; i++ {
			w.event(evs[i])
		}
	}
}

func (w *worker) event(ev syscall.EpollEvent) {
	c := w.byFd[int(ev.Fd)]
	if c == nil {
		return
	}
	if c.state == stConnecting {
		if ev.Events&(syscall.EPOLLOUT|syscall.EPOLLERR|syscall.EPOLLHUP) != 0 {
			w.connected(c)
		}
		return
	}
	if ev.Events&syscall.EPOLLOUT != 0 && len(c.out) > 0 {
		w.flushOut(c)
		if c.fd < 0 {
			return
		}
	}
	if ev.Events&(syscall.EPOLLIN|syscall.EPOLLERR|syscall.EPOLLHUP) != 0 {
		w.readable(c)
	}
}

// closeAll: close frames to every open client, bounded in time.
func (w *worker) closeAll(evs []syscall.EpollEvent) {
	w.stopping = true
	for _, c := range w.clients {
		c.stopping = true
		switch c.state {
		case stOpen:
			w.sendFrame(c, 0x8, []byte{0x03, 0xe8})
			c.state = stClosing
		case stConnecting, stUpgrading:
			w.release(c)
		}
	}
	end := nowNs() + int64(closeBound)
	for len(w.byFd) > 0 && nowNs() < end {
		n, err := syscall.EpollWait(w.ep, evs, 50)
		if err != nil && err != syscall.EINTR {
			return
		}
		for i := 0; i < n; i++ {
			w.event(evs[i])
		}
	}
}
