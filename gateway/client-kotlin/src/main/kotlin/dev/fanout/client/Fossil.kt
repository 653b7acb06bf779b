package dev.fanout.client

/** A delta that does not apply to its base: corrupt, truncated, or made against other bytes. */
class FossilDeltaException(message: String) : IllegalArgumentException(message)

/**
 * Applies Fossil deltas (the format of fossil-scm.org's delta_format page), the deltas the gateway makes
 * with the fossil-delta package. No maintained JVM library exists, so the applying side is written here once
 * and held to the shared vectors (gateway/conformance/vectors/fossil.json).
 *
 * A delta is the target's size, a newline, then commands: `N@O,` copies N bytes of the base from offset O,
 * `N:` inserts the N bytes that follow, and `C;` ends it with C, the target's checksum. Numbers are written
 * in base 64 with the digits `0-9 A-Z _ a-z ~`.
 */
object Fossil {
    /** Largest target [apply] makes by default: a header is read before any byte is checked. */
    const val MAX_TARGET_BYTES = 64 shl 20

    /** The target that [delta] makes from [base]; throws [FossilDeltaException] when it does not apply. */
    fun apply(base: ByteArray, delta: ByteArray, maxSize: Int = MAX_TARGET_BYTES): ByteArray {
        val r = Reader(delta)
        val size = r.int()
        r.expect('\n', "size not terminated by a newline")
        if (size > maxSize) throw FossilDeltaException("target of $size bytes is over the limit of $maxSize")
        val out = ByteArray(size)
        var written = 0
        while (r.more()) {
            val number = r.number()
            val n = if (number > Int.MAX_VALUE) Int.MAX_VALUE else number.toInt() // a count that large fails below
            when (r.op()) {
                '@' -> {
                    val offset = r.int()
                    r.expect(',', "copy not terminated by ','")
                    if (n > size - written) throw FossilDeltaException("copy exceeds the target size")
                    if (offset > base.size - n) throw FossilDeltaException("copy extends past the end of the base")
                    base.copyInto(out, written, offset, offset + n)
                    written += n
                }
                ':' -> {
                    if (n > size - written) throw FossilDeltaException("insert exceeds the target size")
                    r.copy(n, out, written)
                    written += n
                }
                ';' -> {
                    if (number != (checksum(out).toLong() and 0xffffffffL)) throw FossilDeltaException("bad checksum")
                    if (written != size) throw FossilDeltaException("target size does not match the header")
                    return out
                }
                else -> throw FossilDeltaException("unknown delta operator")
            }
        }
        throw FossilDeltaException("unterminated delta")
    }

    /** Fossil's checksum: the sum of the bytes as big-endian 32-bit words, the last one padded with zeros. */
    internal fun checksum(b: ByteArray): Int {
        var sum = 0
        var i = 0
        while (i + 4 <= b.size) {
            sum += ((b[i].toInt() and 0xff) shl 24) or ((b[i + 1].toInt() and 0xff) shl 16) or ((b[i + 2].toInt() and 0xff) shl 8) or (b[i + 3].toInt() and 0xff)
            i += 4
        }
        var shift = 24
        while (i < b.size) {
            sum += (b[i].toInt() and 0xff) shl shift
            shift -= 8
            i++
        }
        return sum
    }

    private const val DIGITS = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz~"
    private val VALUE = IntArray(128) { -1 }.also { v -> DIGITS.forEachIndexed { i, c -> v[c.code] = i } }

    private class Reader(private val d: ByteArray) {
        private var at = 0

        fun more(): Boolean = at < d.size

        /** A size or offset: a number within an int's range (no array is larger). */
        fun int(): Int = number().also { if (it > Int.MAX_VALUE) throw FossilDeltaException("number too large") }.toInt()

        /** A base-64 number of at least one digit, at most 32 bits (a checksum is unsigned 32-bit). */
        fun number(): Long {
            var v = 0L
            val start = at
            while (at < d.size) {
                val c = d[at].toInt() and 0xff
                val x = if (c < 128) VALUE[c] else -1
                if (x < 0) break
                v = (v shl 6) + x
                if (v > 0xffffffffL) throw FossilDeltaException("number too large")
                at++
            }
            if (at == start) throw FossilDeltaException(if (at >= d.size) "unterminated delta" else "number expected")
            return v
        }

        fun op(): Char {
            if (at >= d.size) throw FossilDeltaException("unterminated delta")
            return (d[at++].toInt() and 0xff).toChar()
        }

        fun expect(c: Char, why: String) {
            if (at >= d.size || (d[at].toInt() and 0xff) != c.code) throw FossilDeltaException(why)
            at++
        }

        fun copy(n: Int, out: ByteArray, to: Int) {
            if (n > d.size - at) throw FossilDeltaException("insert exceeds the delta")
            d.copyInto(out, to, at, at + n)
            at += n
        }
    }
}
