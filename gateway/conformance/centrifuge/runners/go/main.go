// The Go SDK's runner (centrifuge-go): drives the SDK from JSON lines on stdin and reports what it sees as JSON
// lines on stdout (gateway/conformance/centrifuge/README.md). `--protobuf` speaks the Protobuf format.
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sort"
	"sync"
	"time"

	"github.com/centrifugal/centrifuge-go"
)

type obj = map[string]any

type runner struct {
	protobuf bool
	mu       sync.Mutex // guards out, gen, client, subs, token, subTokens, last
	out      *bufio.Writer
	gen      int // the scenario's generation: events of an older one are dropped
	client   *centrifuge.Client
	subs     map[string]*centrifuge.Subscription
	last     map[string]uint64 // per sub, the offset of its last publication
	token    string            // what the token getter hands out (setToken)
	// per channel, what a sub's token getter hands out (setSubToken)
	subTokens map[string]string
}

func (r *runner) write(v obj) {
	b, _ := json.Marshal(v)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.out.Write(append(b, '\n'))
	r.out.Flush()
}

// event writes an event unless its scenario is over.
func (r *runner) event(gen int, v obj) {
	r.mu.Lock()
	stale := gen != r.gen
	r.mu.Unlock()
	if !stale {
		r.write(v)
	}
}

func decode(b []byte) any {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return string(b)
	}
	return v
}

func (r *runner) connect(cmd obj, gen int) (obj, error) {
	cfg := centrifuge.Config{
		Token:             cmd["token"].(string),
		MinReconnectDelay: 50 * time.Millisecond,
		MaxReconnectDelay: 500 * time.Millisecond,
	}
	if cmd["refresh"] == true {
		cfg.GetToken = func(centrifuge.ConnectionTokenEvent) (string, error) {
			r.event(gen, obj{"event": "tokenRequested"})
			r.mu.Lock()
			defer r.mu.Unlock()
			return r.token, nil
		}
	}
	var c *centrifuge.Client
	if r.protobuf {
		c = centrifuge.NewProtobufClient(cmd["url"].(string), cfg)
	} else {
		c = centrifuge.NewJsonClient(cmd["url"].(string), cfg)
	}
	connected := make(chan string, 1)
	failed := make(chan uint32, 1)
	c.OnConnected(func(e centrifuge.ConnectedEvent) {
		r.event(gen, obj{"event": "connected", "client": e.ClientID})
		select {
		case connected <- e.ClientID:
		default:
		}
	})
	c.OnConnecting(func(e centrifuge.ConnectingEvent) {
		r.event(gen, obj{"event": "connecting", "code": e.Code, "reason": e.Reason})
	})
	c.OnDisconnected(func(e centrifuge.DisconnectedEvent) {
		r.event(gen, obj{"event": "disconnected", "code": e.Code, "reason": e.Reason})
		select {
		case failed <- e.Code:
		default:
		}
	})
	c.OnError(func(e centrifuge.ErrorEvent) { r.event(gen, obj{"event": "error", "message": e.Error.Error()}) })
	r.mu.Lock()
	r.client = c
	r.mu.Unlock()
	if err := c.Connect(); err != nil {
		return nil, err
	}
	select {
	case id := <-connected:
		return obj{"client": id}, nil
	case code := <-failed:
		return nil, &centrifuge.Error{Code: code, Message: "disconnected"}
	case <-time.After(15 * time.Second):
		return nil, errors.New("not connected in 15 s")
	}
}

func (r *runner) subscribe(cmd obj, gen int) (obj, error) {
	name, channel := cmd["sub"].(string), cmd["channel"].(string)
	cfg := centrifuge.SubscriptionConfig{
		Recoverable: cmd["recoverable"] == true,
		Positioned:  cmd["positioned"] == true,
		JoinLeave:   cmd["joinLeave"] == true,
	}
	if cmd["subToken"] == true {
		cfg.GetToken = func(centrifuge.SubscriptionTokenEvent) (string, error) {
			r.event(gen, obj{"event": "subTokenRequested", "sub": name})
			r.mu.Lock()
			defer r.mu.Unlock()
			return r.subTokens[channel], nil
		}
	}
	sub, err := r.client.NewSubscription(channel, cfg)
	if err != nil {
		return nil, err
	}
	sub.OnSubscribed(func(e centrifuge.SubscribedEvent) {
		ev := obj{"event": "subscribed", "sub": name, "wasRecovering": e.WasRecovering, "recovered": e.Recovered, "recoverable": e.Recoverable, "positioned": e.Positioned}
		if e.StreamPosition != nil {
			ev["offset"], ev["epoch"] = e.StreamPosition.Offset, e.StreamPosition.Epoch
		}
		r.event(gen, ev)
	})
	sub.OnSubscribing(func(e centrifuge.SubscribingEvent) {
		r.event(gen, obj{"event": "subscribing", "sub": name, "code": e.Code, "reason": e.Reason})
	})
	sub.OnUnsubscribed(func(e centrifuge.UnsubscribedEvent) {
		r.event(gen, obj{"event": "unsubscribed", "sub": name, "code": e.Code, "reason": e.Reason})
	})
	sub.OnError(func(e centrifuge.SubscriptionErrorEvent) {
		r.event(gen, obj{"event": "subError", "sub": name, "message": e.Error.Error()})
	})
	sub.OnPublication(func(e centrifuge.PublicationEvent) {
		ev := obj{"event": "message", "sub": name, "channel": sub.Channel, "seq": e.Offset, "data": decode(e.Data)}
		r.mu.Lock()
		if prev, ok := r.last[name]; ok {
			ev["jump"] = int64(e.Offset) - int64(prev)
		}
		r.last[name] = e.Offset
		r.mu.Unlock()
		r.event(gen, ev)
	})
	sub.OnJoin(func(e centrifuge.JoinEvent) {
		r.event(gen, obj{"event": "join", "sub": name, "user": e.User, "client": e.Client})
	})
	sub.OnLeave(func(e centrifuge.LeaveEvent) {
		r.event(gen, obj{"event": "leave", "sub": name, "user": e.User, "client": e.Client})
	})
	r.mu.Lock()
	r.subs[name] = sub
	r.mu.Unlock()
	return obj{}, sub.Subscribe()
}

func data(cmd obj) []byte {
	b, _ := json.Marshal(cmd["data"])
	return b
}

func pubs(ps []centrifuge.Publication) []obj {
	out := make([]obj, 0, len(ps))
	for _, p := range ps {
		out = append(out, obj{"offset": p.Offset, "data": decode(p.Data)})
	}
	return out
}

// handle runs one command and answers it.
func (r *runner) handle(cmd obj) (obj, error) {
	r.mu.Lock()
	gen, c := r.gen, r.client
	r.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	str := func(k string) string { s, _ := cmd[k].(string); return s }
	if c == nil && cmd["cmd"] != "connect" && cmd["cmd"] != "setToken" && cmd["cmd"] != "setSubToken" && cmd["cmd"] != "reset" && cmd["cmd"] != "close" {
		return nil, errors.New("not connected")
	}
	switch cmd["cmd"] {
	case "connect":
		return r.connect(cmd, gen)
	case "setToken":
		r.mu.Lock()
		r.token = str("token")
		r.mu.Unlock()
		return obj{}, nil
	case "setSubToken":
		r.mu.Lock()
		r.subTokens[str("channel")] = str("token")
		r.mu.Unlock()
		return obj{}, nil
	case "subscribe":
		return r.subscribe(cmd, gen)
	case "unsubscribe":
		r.mu.Lock()
		sub := r.subs[str("sub")]
		r.mu.Unlock()
		if sub == nil {
			return nil, errors.New("no such sub")
		}
		return obj{}, sub.Unsubscribe()
	case "publish":
		_, err := c.Publish(ctx, str("channel"), data(cmd))
		return obj{}, err
	case "presence":
		p, err := c.Presence(ctx, str("channel"))
		if err != nil {
			return nil, err
		}
		users := []string{}
		for _, ci := range p.Clients {
			users = append(users, ci.User)
		}
		sort.Strings(users)
		return obj{"users": users}, nil
	case "presenceStats":
		s, err := c.PresenceStats(ctx, str("channel"))
		if err != nil {
			return nil, err
		}
		return obj{"numClients": s.NumClients, "numUsers": s.NumUsers}, nil
	case "history":
		limit, _ := cmd["limit"].(float64)
		h, err := c.History(ctx, str("channel"), centrifuge.WithHistoryLimit(int32(limit)), centrifuge.WithHistoryReverse(cmd["reverse"] == true))
		if err != nil {
			return nil, err
		}
		return obj{"publications": pubs(h.Publications), "offset": h.Offset, "epoch": h.Epoch}, nil
	case "rpc":
		res, err := c.RPC(ctx, str("method"), data(cmd))
		if err != nil {
			return nil, err
		}
		return obj{"data": decode(res.Data)}, nil
	case "reset", "close":
		r.mu.Lock()
		r.gen++
		old := r.client
		r.client, r.subs, r.last, r.token, r.subTokens = nil, map[string]*centrifuge.Subscription{}, map[string]uint64{}, "", map[string]string{}
		r.mu.Unlock()
		if old != nil {
			old.Close()
		}
		return obj{}, nil
	}
	return nil, fmt.Errorf("unknown command %v", cmd["cmd"])
}

func (r *runner) answer(id any, res obj, err error) {
	if err == nil {
		r.write(obj{"id": id, "ok": true, "result": res})
		return
	}
	var se *centrifuge.Error
	if errors.As(err, &se) {
		r.write(obj{"id": id, "ok": false, "error": obj{"code": fmt.Sprint(se.Code), "temporary": se.Temporary, "message": se.Message}})
		return
	}
	r.write(obj{"id": id, "ok": false, "error": obj{"code": "runner", "temporary": false, "message": err.Error()}})
}

func main() {
	r := &runner{protobuf: len(os.Args) > 1 && os.Args[1] == "--protobuf", out: bufio.NewWriter(os.Stdout), subs: map[string]*centrifuge.Subscription{}, last: map[string]uint64{}, subTokens: map[string]string{}}
	r.write(obj{"event": "adapter", "reset": true})
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 1<<24)
	for in.Scan() {
		var cmd obj
		if err := json.Unmarshal(in.Bytes(), &cmd); err != nil {
			fmt.Fprintln(os.Stderr, "bad line:", err)
			continue
		}
		if cmd["cmd"] == "close" {
			res, err := r.handle(cmd)
			r.answer(cmd["id"], res, err)
			return
		}
		// Each command in its own goroutine: a step marked async leaves its command in flight.
		go func() {
			res, err := r.handle(cmd)
			r.answer(cmd["id"], res, err)
		}()
	}
}
