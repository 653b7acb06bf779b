package main

// One gateway client on a raw non-blocking socket: connect (optionally from a planned source address and
// port), HTTP upgrade with the accept key checked, server frames read in place, masked client
// frames out.

import (
	"bytes"
	"crypto/sha1"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"errors"
	"math/rand"
	"strconv"
	"syscall"
)

const (
	stIdle = iota
	stConnecting
	stUpgrading
	stOpen
	stClosing
)

const wsGUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
const maxMessage = 16 << 20

type client struct {
	idx       int
	fd        int
	state     int
	host      [4]byte
	local     *[4]byte
	localPort int
	key       string
	head      []byte
	reader    frameReader
	out       []byte
	closeCode int
	deadline  int64
	inGate    bool
	stopping  bool
	attempt   int

	subscribed, everSubscribed bool
	lastFailure                string
	trackers                   []*tracker
	lastSeq                    []int64
	epoch                      string
	pending                    int
	nextID                     int
}

func (w *worker) connect(c *client) {
	c.inGate = true
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_NONBLOCK|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		w.closed(c, false, errnoName(err), err.Error())
		return
	}
	c.fd = fd
	_ = syscall.SetsockoptInt(fd, syscall.IPPROTO_TCP, syscall.TCP_NODELAY, 1)
	// The kernel stamps each chunk when it reaches the socket: latency then excludes this tool's own wait.
	_ = syscall.SetsockoptInt(fd, syscall.SOL_SOCKET, syscall.SO_TIMESTAMPNS, 1)
	if c.local != nil {
		// The planned port (outside the ephemeral range: one lookup in the kernel). Without one, or once it
		// was found taken, the address only: IP_BIND_ADDRESS_NO_PORT leaves the port to connect, which picks
		// one unique per 4-tuple (a bind to port 0 would hold its port away from every address).
		port := c.localPort
		if c.lastFailure == "EADDRINUSE" {
			port = 0
		}
		if port == 0 {
			_ = syscall.SetsockoptInt(fd, syscall.IPPROTO_IP, ipBindAddressNoPort, 1)
		}
		if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: *c.local, Port: port}); err != nil {
			w.fail(c, errnoName(err), "bind: "+err.Error())
			return
		}
	}
	err = syscall.Connect(fd, &syscall.SockaddrInet4{Addr: c.host, Port: w.opts.Port})
	if err != nil && !errors.Is(err, syscall.EINPROGRESS) {
		w.fail(c, errnoName(err), "connect: "+err.Error())
		return
	}
	c.state = stConnecting
	c.deadline = nowNs() + 10e9
	if err := syscall.EpollCtl(w.ep, syscall.EPOLL_CTL_ADD, fd, &syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLOUT, Fd: int32(fd)}); err != nil {
		w.fail(c, errnoName(err), "epoll: "+err.Error())
		return
	}
	w.byFd[fd] = c
}

// connected: the TCP connect finished (EPOLLOUT); sends the upgrade request.
func (w *worker) connected(c *client) {
	v, err := syscall.GetsockoptInt(c.fd, syscall.SOL_SOCKET, syscall.SO_ERROR)
	if err == nil && v != 0 {
		err = syscall.Errno(v)
	}
	if err != nil {
		w.fail(c, errnoName(err), "connect: "+err.Error())
		return
	}
	var k [16]byte
	rand.Read(k[:])
	c.key = base64.StdEncoding.EncodeToString(k[:])
	req := "GET " + w.opts.Path + " HTTP/1.1\r\nHost: " + w.hostNames[c.host] + ":" + strconv.Itoa(w.opts.Port) +
		"\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: " + c.key + "\r\nSec-WebSocket-Version: 13\r\n\r\n"
	c.state = stUpgrading
	_ = syscall.EpollCtl(w.ep, syscall.EPOLL_CTL_MOD, c.fd, &syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: int32(c.fd)})
	w.write(c, []byte(req))
}

// write sends now, keeping what the socket does not take for EPOLLOUT.
func (w *worker) write(c *client, b []byte) {
	if len(c.out) > 0 {
		c.out = append(c.out, b...)
		return
	}
	n, err := syscall.Write(c.fd, b)
	if err != nil && !errors.Is(err, syscall.EAGAIN) {
		w.fail(c, errnoName(err), "write: "+err.Error())
		return
	}
	if n < 0 {
		n = 0
	}
	if n < len(b) {
		c.out = append(c.out, b[n:]...)
		_ = syscall.EpollCtl(w.ep, syscall.EPOLL_CTL_MOD, c.fd, &syscall.EpollEvent{Events: syscall.EPOLLIN | syscall.EPOLLOUT, Fd: int32(c.fd)})
	}
}

func (w *worker) flushOut(c *client) {
	n, err := syscall.Write(c.fd, c.out)
	if err != nil && !errors.Is(err, syscall.EAGAIN) {
		w.fail(c, errnoName(err), "write: "+err.Error())
		return
	}
	if n > 0 {
		c.out = c.out[n:]
	}
	if len(c.out) == 0 {
		c.out = nil
		_ = syscall.EpollCtl(w.ep, syscall.EPOLL_CTL_MOD, c.fd, &syscall.EpollEvent{Events: syscall.EPOLLIN, Fd: int32(c.fd)})
	}
}

// sendFrame writes one masked client frame (RFC 6455 §5.3).
func (w *worker) sendFrame(c *client, opcode byte, payload []byte) {
	n := len(payload)
	f := make([]byte, 0, n+14)
	f = append(f, 0x80|opcode)
	switch {
	case n < 126:
		f = append(f, 0x80|byte(n))
	case n < 65536:
		f = append(f, 0x80|126, byte(n>>8), byte(n))
	default:
		f = append(f, 0x80|127)
		f = binary.BigEndian.AppendUint64(f, uint64(n))
	}
	var m [4]byte
	binary.LittleEndian.PutUint32(m[:], rand.Uint32())
	f = append(f, m[:]...)
	for i := 0; i < n; i++ {
		f = append(f, payload[i]^m[i&3])
	}
	w.write(c, f)
}

// readable: one recvmsg; the chunk's arrival time is the kernel's stamp when there is one.
func (w *worker) readable(c *client) {
	n, oobn, _, _, err := syscall.Recvmsg(c.fd, w.rbuf, w.oob, 0)
	if err != nil {
		if errors.Is(err, syscall.EAGAIN) || errors.Is(err, syscall.EINTR) {
			return
		}
		w.fail(c, errnoName(err), "read: "+err.Error())
		return
	}
	if n == 0 {
		w.closedByPeer(c)
		return
	}
	userUs := float64(nowNs()) / 1000
	recvUs := userUs
	if kts := cmsgTimestampNs(w.oob[:oobn]); kts > 0 {
		recvUs = float64(kts) / 1000
		d := userUs - recvUs
		w.delay.Count++
		w.delay.SumUs += d
		if d > w.delay.MaxUs {
			w.delay.MaxUs = d
		}
	} else {
		w.userClock++
	}
	data := w.rbuf[:n]
	if c.state == stUpgrading {
		w.upgrade(c, data, recvUs)
		return
	}
	if c.state == stOpen || c.state == stClosing {
		w.feed(c, data, recvUs)
	}
}

// cmsgTimestampNs reads SCM_TIMESTAMPNS from a control buffer (0 when absent).
func cmsgTimestampNs(oob []byte) int64 {
	for len(oob) >= 16 {
		l := int(binary.LittleEndian.Uint64(oob[0:8]))
		level := int32(binary.LittleEndian.Uint32(oob[8:12]))
		typ := int32(binary.LittleEndian.Uint32(oob[12:16]))
		if l < 16 || l > len(oob) {
			return 0
		}
		if level == syscall.SOL_SOCKET && typ == syscall.SO_TIMESTAMPNS && l >= 32 {
			sec := int64(binary.LittleEndian.Uint64(oob[16:24]))
			nsec := int64(binary.LittleEndian.Uint64(oob[24:32]))
			return sec*1e9 + nsec
		}
		oob = oob[(l+7)&^7:]
	}
	return 0
}

var headerEnd = []byte("\r\n\r\n")

func (w *worker) upgrade(c *client, data []byte, recvUs float64) {
	c.head = append(c.head, data...)
	at := bytes.Index(c.head, headerEnd)
	if at < 0 {
		if len(c.head) > 16*1024 {
			w.fail(c, "bad_upgrade", "upgrade response headers over 16 KiB")
		}
		return
	}
	text := string(c.head[:at])
	rest := c.head[at+4:]
	c.head = nil
	status := 0
	if len(text) >= 12 && text[:9] == "HTTP/1.1 " {
		status, _ = strconv.Atoi(text[9:12])
	}
	if status != 101 {
		first := text
		if i := bytes.IndexByte([]byte(text), '\r'); i >= 0 {
			first = text[:i]
		}
		w.fail(c, "HTTP_"+strconv.Itoa(status), "upgrade refused: "+first)
		return
	}
	sum := sha1.Sum([]byte(c.key + wsGUID))
	want := base64.StdEncoding.EncodeToString(sum[:])
	if !headerHas(text, "sec-websocket-accept", want) {
		w.fail(c, "bad_upgrade", "wrong Sec-WebSocket-Accept")
		return
	}
	c.state = stOpen
	w.leaveGate(c)
	w.sendSubs(c)
	if len(rest) > 0 {
		w.feed(c, append([]byte(nil), rest...), recvUs)
	}
}

func headerHas(text, name, value string) bool {
	for _, line := range bytes.Split([]byte(text), []byte("\r\n")) {
		i := bytes.IndexByte(line, ':')
		if i > 0 && bytes.EqualFold(bytes.TrimSpace(line[:i]), []byte(name)) {
			return string(bytes.TrimSpace(line[i+1:])) == value
		}
	}
	return false
}

// feed hands a chunk to the client's frame reader; a refused frame fails the connection.
func (w *worker) feed(c *client, data []byte, recvUs float64) {
	w.sink.c, w.sink.recvUs = c, recvUs
	if err := c.reader.feed(data, &w.sink); err != nil {
		w.fail(c, "bad_frame", err.Error())
	}
}

// clientSink takes the frames of the client being read (one per worker, pointed at that client).
type clientSink struct {
	w      *worker
	c      *client
	recvUs float64
}

func (s *clientSink) message(op byte, p []byte) bool {
	if op == opBinary {
		s.w.badFrames++
		return true
	}
	s.w.message(s.c, p, s.recvUs)
	return s.c.fd >= 0
}

func (s *clientSink) control(op byte, p []byte) bool {
	w, c := s.w, s.c
	switch op {
	case opPing:
		if c.state == stOpen {
			w.sendFrame(c, opPong, p)
		}
	case opClose:
		c.closeCode = 1005
		if len(p) >= 2 {
			c.closeCode = int(binary.BigEndian.Uint16(p))
		}
		if c.state == stOpen {
			code := c.closeCode
			if code == 1005 {
				code = 1000
			}
			w.sendFrame(c, opClose, []byte{byte(code >> 8), byte(code)})
		}
		c.state = stClosing
		_ = syscall.Shutdown(c.fd, syscall.SHUT_WR)
	}
	return c.fd >= 0
}

// message: a whole text message from the gateway.
func (w *worker) message(c *client, b []byte, recvUs float64) {
	switch gatewayFrame(b, &w.sc) {
	case 1:
		w.account(c, recvUs)
	case -1:
		w.badFrames++
	default:
		w.control(c, b)
	}
}

type controlFrame struct {
	Op      string          `json:"op"`
	Code    string          `json:"code"`
	Message string          `json:"message"`
	Epoch   json.RawMessage `json:"epoch"`
}

func (w *worker) control(c *client, b []byte) {
	var f controlFrame
	if json.Unmarshal(b, &f) != nil {
		return
	}
	switch f.Op {
	case "ok":
		if c.pending > 0 {
			var e string
			if json.Unmarshal(f.Epoch, &e) == nil {
				c.epoch = e
			}
			c.pending--
			if c.pending == 0 {
				w.markSubscribed(c)
			}
		}
	case "err":
		w.subErrors++
		if w.firstError == nil {
			s := "subscribe refused: " + f.Code + ": " + f.Message
			w.firstError = &s
		}
	}
}

// sendSubs: a `sub` per pattern; a pattern that delivered before resumes after its last seq.
func (w *worker) sendSubs(c *client) {
	c.pending = len(w.opts.Channels)
	for i, ch := range w.opts.Channels {
		c.nextID++
		chJSON, _ := json.Marshal(ch)
		f := `{"op":"sub","id":` + strconv.Itoa(c.nextID) + `,"channel":` + string(chJSON)
		if last := c.lastSeq[i]; last >= 0 {
			f += `,"from":{"seq":` + strconv.FormatInt(last+1, 10)
			if c.epoch != "" {
				e, _ := json.Marshal(c.epoch)
				f += `,"epoch":` + string(e)
			}
			f += "}"
		} else if len(w.opts.From) > 0 && string(w.opts.From) != "null" {
			f += `,"from":` + string(w.opts.From)
		}
		w.sendFrame(c, 0x1, []byte(f+"}"))
	}
}

// fail closes a connection for a local reason.
func (w *worker) fail(c *client, reason, msg string) {
	opened := c.state >= stOpen
	w.release(c)
	w.closed(c, opened, reason, msg)
}

func (w *worker) closedByPeer(c *client) {
	opened := c.state >= stOpen
	reason := "connection lost"
	if c.closeCode != 0 {
		reason = "closed"
	}
	if c.state == stUpgrading {
		reason = "ECONNRESET"
	}
	w.release(c)
	w.closed(c, opened, reason, "connection closed by the server")
}

func (w *worker) release(c *client) {
	if c.fd >= 0 {
		delete(w.byFd, c.fd)
		_ = syscall.Close(c.fd)
	}
	c.fd = -1
	c.state = stIdle
	c.head, c.out = nil, nil
	c.reader.reset()
}
