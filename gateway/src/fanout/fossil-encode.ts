/*
 * The Fossil delta encoder with a bound on its work. The algorithm and output are those of `fossil-delta`'s
 * createDelta (Dmitry Chestnykh's JavaScript port of D. Richard Hipp's C original, BSD License,
 * https://github.com/dchest/fossil-delta-js/): the same bytes for the same inputs, so every client's decoder
 * reads them. What differs: the encoder counts its byte comparisons and hash-chain steps, and gives up (returns
 * undefined, the message then goes full) once they pass the budget the caller gives. Without it a crafted
 * payload (many equal 16-byte blocks in the base, a target that matches each one only a little) costs up to
 * 250 comparisons per target byte: ~160 ms of CPU for 64 KiB where an ordinary document of that size takes
 * ~15 ms (issue 41).
 *
 * The encoder is derived from fossil-delta, under its licence:
 *
 * Copyright 2014-2024 Dmitry Chestnykh (JavaScript port)
 * Copyright 2007 D. Richard Hipp  (original C version)
 * All rights reserved.
 *
 * Redistribution and use in source and binary forms, with or
 * without modification, are permitted provided that the
 * following conditions are met:
 *
 *   1. Redistributions of source code must retain the above
 *      copyright notice, this list of conditions and the
 *      following disclaimer.
 *
 *   2. Redistributions in binary form must reproduce the above
 *      copyright notice, this list of conditions and the
 *      following disclaimer in the documentation and/or other
 *      materials provided with the distribution.
 *
 * THIS SOFTWARE IS PROVIDED BY THE AUTHORS ``AS IS'' AND ANY EXPRESS
 * OR IMPLIED WARRANTIES, INCLUDING, BUT NOT LIMITED TO, THE IMPLIED
 * WARRANTIES OF MERCHANTABILITY AND FITNESS FOR A PARTICULAR PURPOSE
 * ARE DISCLAIMED. IN NO EVENT SHALL THE AUTHORS OR CONTRIBUTORS BE
 * LIABLE FOR ANY DIRECT, INDIRECT, INCIDENTAL, SPECIAL, EXEMPLARY, OR
 * CONSEQUENTIAL DAMAGES (INCLUDING, BUT NOT LIMITED TO, PROCUREMENT OF
 * SUBSTITUTE GOODS OR SERVICES; LOSS OF USE, DATA, OR PROFITS; OR
 * BUSINESS INTERRUPTION) HOWEVER CAUSED AND ON ANY THEORY OF LIABILITY,
 * WHETHER IN CONTRACT, STRICT LIABILITY, OR TORT (INCLUDING NEGLIGENCE
 * OR OTHERWISE) ARISING IN ANY WAY OUT OF THE USE OF THIS SOFTWARE,
 * EVEN IF ADVISED OF THE POSSIBILITY OF SUCH DAMAGE.
 *
 * The views and conclusions contained in the software and documentation
 * are those of the authors and contributors and should not be interpreted
 * as representing official policies, either expressed or implied, of anybody
 * else.
 */

/** Hash window width in bytes (a power of two). */
const NHASH = 16;
/** Candidates of one hash chain tried per target position (the C original's bound). */
const CHAIN_LIMIT = 250;

const DIGITS = new TextEncoder().encode("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz~");
const NEWLINE = 0x0a;
const COLON = 0x3a;
const AT = 0x40;
const COMMA = 0x2c;
const SEMICOLON = 0x3b;

/**
 * Work units a delta may cost per byte of base plus payload before the encoder gives up. An ordinary document
 * costs about 1 to 3 per byte (each byte compared once or twice, a few chain steps); the crafted payloads
 * of issue 41 cost over 100.
 */
export const DELTA_WORK_PER_BYTE = 16;

/** A growing byte buffer for the delta's output. */
class Out {
  private buf: Uint8Array;
  private n = 0;

  constructor(size: number) {
    this.buf = new Uint8Array(Math.max(64, size));
  }

  private room(more: number): void {
    if (this.n + more <= this.buf.length) return;
    const next = new Uint8Array(Math.max(this.buf.length * 2, this.n + more));
    next.set(this.buf.subarray(0, this.n));
    this.buf = next;
  }

  byte(b: number): void {
    this.room(1);
    this.buf[this.n++] = b;
  }

  /** A base-64 unsigned integer, most significant digit first. */
  int(v: number): void {
    const digits = digitCount(v);
    this.room(digits);
    for (let i = digits - 1; i >= 0; i--, v = Math.floor(v / 64)) this.buf[this.n + i] = DIGITS[v % 64] ?? 0;
    this.n += digits;
  }

  bytes(a: Uint8Array, start: number, end: number): void {
    this.room(end - start);
    this.buf.set(a.subarray(start, end), this.n);
    this.n += end - start;
  }

  result(): Uint8Array {
    return this.buf.slice(0, this.n);
  }
}

/** Digits of `v` in base 64. */
function digitCount(v: number): number {
  let i = 1;
  for (let x = 64; v >= x; i++, x *= 64) {
    /* counting */
  }
  return i;
}

/** Fossil's rolling hash over a window of NHASH bytes. */
class RollingHash {
  private a = 0;
  private b = 0;
  private i = 0;
  private readonly z = new Uint8Array(NHASH);

  init(data: Uint8Array, pos: number): void {
    let a = 0;
    let b = 0;
    for (let i = 0; i < NHASH; i++) {
      const x = data[pos + i] ?? 0;
      a = (a + x) & 0xffff;
      b = (b + (NHASH - i) * x) & 0xffff;
      this.z[i] = x;
    }
    this.a = a;
    this.b = b;
    this.i = 0;
  }

  next(c: number): void {
    const old = this.z[this.i] ?? 0;
    this.z[this.i] = c;
    this.i = (this.i + 1) & (NHASH - 1);
    this.a = (this.a - old + c) & 0xffff;
    this.b = (this.b - NHASH * old + this.a) & 0xffff;
  }

  value(): number {
    return ((this.a & 0xffff) | ((this.b & 0xffff) << 16)) >>> 0;
  }
}

/** Fossil's 32-bit checksum of the target, the delta's last record. */
function checksum(arr: Uint8Array): number {
  let sum0 = 0;
  let sum1 = 0;
  let sum2 = 0;
  let sum3 = 0;
  let z = 0;
  let n = arr.length;
  while (n >= 4) {
    sum0 = (sum0 + (arr[z] ?? 0)) | 0;
    sum1 = (sum1 + (arr[z + 1] ?? 0)) | 0;
    sum2 = (sum2 + (arr[z + 2] ?? 0)) | 0;
    sum3 = (sum3 + (arr[z + 3] ?? 0)) | 0;
    z += 4;
    n -= 4;
  }
  sum3 = (((((sum3 + (sum2 << 8)) | 0) + (sum1 << 16)) | 0) + (sum0 << 24)) | 0;
  if (n >= 3) sum3 = (sum3 + ((arr[z + 2] ?? 0) << 8)) | 0;
  if (n >= 2) sum3 = (sum3 + ((arr[z + 1] ?? 0) << 16)) | 0;
  if (n >= 1) sum3 = (sum3 + ((arr[z] ?? 0) << 24)) | 0;
  return sum3 >>> 0;
}

/** The index of the source: NHASH-byte blocks by hash, each bucket a chain (`landmark` its head, `collide` the next). */
function indexSource(source: Uint8Array): { nHash: number; landmark: Int32Array; collide: Int32Array } {
  const nHash = Math.ceil(source.length / NHASH);
  const landmark = new Int32Array(nHash).fill(-1);
  const collide = new Int32Array(nHash).fill(-1);
  const h = new RollingHash();
  for (let i = 0; i < source.length - NHASH; i += NHASH) {
    h.init(source, i);
    const hv = h.value() % nHash;
    collide[i / NHASH] = landmark[hv] ?? -1;
    landmark[hv] = i / NHASH;
  }
  return { nHash, landmark, collide };
}

/**
 * The Fossil delta from `source` to `target`, byte for byte what fossil-delta's createDelta makes, or undefined
 * when making it would take more than `maxWork` units (one unit: a byte compared, a chain candidate tried, a
 * target position hashed). Its cost is then at most about `maxWork` units plus the source's indexing (linear).
 */
export function createBoundedDelta(source: Uint8Array, target: Uint8Array, maxWork: number): Uint8Array | undefined {
  const lenOut = target.length;
  const lenSrc = source.length;
  const out = new Out(Math.min(lenOut, 4_096) + 32);
  out.int(lenOut);
  out.byte(NEWLINE);
  if (lenSrc <= NHASH) {
    // No copy can come from a source this small: one literal insert.
    out.int(lenOut);
    out.byte(COLON);
    out.bytes(target, 0, lenOut);
    out.int(checksum(target));
    out.byte(SEMICOLON);
    return out.result();
  }
  const { nHash, landmark, collide } = indexSource(source);
  const h = new RollingHash();
  let work = 0;
  let base = 0;
  while (base + NHASH < lenOut) {
    let bestOfst = 0;
    let bestLitsz = 0;
    let bestCnt = 0;
    h.init(target, base);
    let i = 0; // the target position base + i is matched against the source's landmarks
    for (;;) {
      let limit = CHAIN_LIMIT;
      let iBlock = landmark[h.value() % nHash] ?? -1;
      while (iBlock >= 0 && limit-- > 0) {
        const iSrc = iBlock * NHASH;
        let j = 0;
        for (let x = iSrc, y = base + i; x < lenSrc && y < lenOut && source[x] === target[y]; x++, y++) j++;
        let k = 1;
        while (k < iSrc && k <= i && source[iSrc - k] === target[base + i - k]) k++;
        work += j + k + 1;
        if (work > maxWork) return undefined;
        // j, k - 1: bytes matching forwards from iSrc and backwards before it
        k--;
        const cnt = j + k;
        const sz = digitCount(i - k) + digitCount(cnt) + digitCount(iSrc - k) + 3;
        if (cnt >= sz && cnt > bestCnt) {
          bestCnt = cnt;
          bestOfst = iSrc - k;
          bestLitsz = i - k;
        }
        iBlock = collide[iBlock] ?? -1;
      }
      if (bestCnt > 0) {
        if (bestLitsz > 0) {
          out.int(bestLitsz);
          out.byte(COLON);
          out.bytes(target, base, base + bestLitsz);
          base += bestLitsz;
        }
        base += bestCnt;
        out.int(bestCnt);
        out.byte(AT);
        out.int(bestOfst);
        out.byte(COMMA);
        break;
      }
      if (base + i + NHASH >= lenOut) {
        out.int(lenOut - base);
        out.byte(COLON);
        out.bytes(target, base, lenOut);
        base = lenOut;
        break;
      }
      h.next(target[base + i + NHASH] ?? 0);
      i++;
      if (++work > maxWork) return undefined;
    }
  }
  if (base < lenOut) {
    out.int(lenOut - base);
    out.byte(COLON);
    out.bytes(target, base, lenOut);
  }
  out.int(checksum(target));
  out.byte(SEMICOLON);
  return out.result();
}
