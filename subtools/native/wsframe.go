package main

// Server → client WebSocket frames (RFC 6455 §5.2) read out of TCP chunks: the rules of the lean engine's
// reader (subtools/src/lean/frame-reader.ts), held to the same cases (subtools/test/vectors/ws-frames.json).
// Servers never mask, so a frame is a 2–10 byte header and its payload. A frame split across chunks waits
// in carry; fragmented messages are joined; control frames go to the sink as they come, also between the
// fragments of a message.

import (
	"encoding/binary"
	"strconv"
)

const (
	opContinuation = 0x0
	opText         = 0x1
	opBinary       = 0x2
	opClose        = 0x8
	opPing         = 0x9
	opPong         = 0xa
)

// frameError: a frame the reader refuses; the connection should be closed with code.
type frameError struct {
	msg  string
	code int
}

func (e *frameError) Error() string { return e.msg }

// frameSink receives what the reader finds. p is only valid during the call. Returning false stops the
// reader at once (the connection was closed): nothing of the reader is touched after that.
type frameSink interface {
	message(op byte, p []byte) bool
	control(op byte, p []byte) bool
}

type frameReader struct {
	max      int
	carry    []byte
	frag     []byte
	fragOp   byte
	fragging bool
}

func newFrameReader(max int) frameReader { return frameReader{max: max} }

func (r *frameReader) reset() { r.carry, r.frag, r.fragging = nil, nil, false }

// feed reads every whole frame of the chunk; a partial frame waits in carry.
func (r *frameReader) feed(data []byte, sink frameSink) error {
	buf := data
	if len(r.carry) > 0 {
		r.carry = append(r.carry, data...)
		buf = r.carry
	}
	pos := 0
	for len(buf)-pos >= 2 {
		b0, b1 := buf[pos], buf[pos+1]
		if b0&0x70 != 0 {
			return &frameError{"reserved bits set (no extension was negotiated)", 1002}
		}
		if b1&0x80 != 0 {
			return &frameError{"a server frame is masked", 1002}
		}
		l := uint64(b1 & 0x7f)
		head := 2
		if l == 126 {
			if len(buf)-pos < 4 {
				break
			}
			l = uint64(binary.BigEndian.Uint16(buf[pos+2:]))
			head = 4
		} else if l == 127 {
			if len(buf)-pos < 10 {
				break
			}
			l = binary.BigEndian.Uint64(buf[pos+2:])
			head = 10
		}
		if l > uint64(r.max) {
			return &frameError{"frame of " + strconv.FormatUint(l, 10) + " bytes is over the " + strconv.Itoa(r.max) + "-byte limit", 1009}
		}
		if uint64(len(buf)-pos-head) < l {
			break
		}
		s := pos + head
		pos = s + int(l)
		more, err := r.frame(b0, buf[s:pos], sink)
		if err != nil {
			return err
		}
		if !more {
			return nil
		}
	}
	if pos == len(buf) {
		r.carry = r.carry[:0]
		return nil
	}
	if len(r.carry) > 0 {
		r.carry = append(r.carry[:0], buf[pos:]...)
	} else {
		// data may be the worker's shared read buffer: keep a copy.
		r.carry = append(make([]byte, 0, 2*(len(buf)-pos)+256), buf[pos:]...)
	}
	return nil
}

// frame handles one frame; more is false when the sink stopped the reader.
func (r *frameReader) frame(b0 byte, p []byte, sink frameSink) (more bool, err error) {
	fin := b0&0x80 != 0
	op := b0 & 0x0f
	if op >= 0x8 {
		if !fin || len(p) > 125 {
			return false, &frameError{"a control frame is fragmented or longer than 125 bytes", 1002}
		}
		if op != opClose && op != opPing && op != opPong {
			return false, &frameError{"unknown control opcode " + strconv.Itoa(int(op)), 1002}
		}
		return sink.control(op, p), nil
	}
	switch op {
	case opContinuation:
		if !r.fragging {
			return false, &frameError{"continuation frame without a message to continue", 1002}
		}
		if err := r.addFragment(p); err != nil {
			return false, err
		}
		if !fin {
			return true, nil
		}
		whole := r.frag
		r.frag, r.fragging = nil, false
		return sink.message(r.fragOp, whole), nil
	case opText, opBinary:
		if r.fragging {
			return false, &frameError{"a new message began before the fragmented one ended", 1002}
		}
		if fin {
			return sink.message(op, p), nil
		}
		r.fragging, r.fragOp, r.frag = true, op, r.frag[:0]
		return true, r.addFragment(p)
	}
	return false, &frameError{"unknown data opcode " + strconv.Itoa(int(op)), 1002}
}

func (r *frameReader) addFragment(p []byte) error {
	if len(r.frag)+len(p) > r.max {
		return &frameError{"message over the " + strconv.Itoa(r.max) + "-byte limit", 1009}
	}
	r.frag = append(r.frag, p...)
	return nil
}
