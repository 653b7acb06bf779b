package dev.fanout.client

import kotlinx.serialization.SerializationException
import kotlinx.serialization.json.Json
import kotlinx.serialization.json.JsonElement

/**
 * Deepest nesting of arrays and objects (maps) the client reads from a server, the frame itself counting as
 * one level: above the 101 levels the gateway's MessagePack encoder writes at most, far below what recursion over
 * the result (decoding, `toString`, `equals`) needs to overflow a thread's stack.
 */
const val MAX_FRAME_DEPTH = 128

/**
 * Checks on what a server sends, made before anything is decoded, so that a hostile server (or a man in the
 * middle on `ws://`) cannot make the client allocate what a frame only declares, or recurse without end:
 * both would be an [Error] (OutOfMemoryError, StackOverflowError) that no `catch (e: Exception)` sees.
 */
internal object Bounds {
    /**
     * Whether [b] is exactly one MessagePack value whose every declared length fits in the bytes that follow
     * its header (an array's elements take a byte each at least, a map's entries two, a string's, bin's or
     * ext's bytes are there), nested at most [maxDepth] deep. Reads headers only, allocates nothing but a
     * [maxDepth]-long counter array, and does not recurse.
     */
    fun msgpackFits(b: ByteArray, maxDepth: Int = MAX_FRAME_DEPTH): Boolean {
        val left = LongArray(maxDepth + 1) // values still to read at each open level; level 0 is the frame's one value
        left[0] = 1
        var depth = 0
        var i = 0
        while (true) {
            while (left[depth] == 0L) if (--depth < 0) return i == b.size
            if (i >= b.size) return false
            left[depth]--
            val h = b[i].toInt() and 0xff
            val rest = b.size - i - 1
            // What follows the first byte: `skip` bytes of scalar or header, then `body` bytes, or `items` values.
            var skip = 0
            var body = 0L
            var items = -1L
            when {
                h <= 0x7f || h >= 0xe0 || h == 0xc0 || h == 0xc2 || h == 0xc3 -> {}
                h <= 0x8f -> items = 2L * (h and 0x0f)
                h <= 0x9f -> items = (h and 0x0f).toLong()
                h <= 0xbf -> body = (h and 0x1f).toLong()
                h == 0xc1 -> return false // never used
                h <= 0xc6 -> (1 shl (h - 0xc4)).let { n -> skip = n; body = uint(b, i + 1, n, rest) ?: return false } // bin 8/16/32
                h <= 0xc9 -> (1 shl (h - 0xc7)).let { n -> skip = n + 1; body = uint(b, i + 1, n, rest) ?: return false } // ext 8/16/32
                h == 0xca -> skip = 4
                h == 0xcb -> skip = 8
                h <= 0xd3 -> skip = 1 shl ((h - 0xcc) and 3) // uint, int 8–64
                h <= 0xd8 -> skip = 1 + (1 shl (h - 0xd4)) // fixext 1–16
                h <= 0xdb -> (1 shl (h - 0xd9)).let { n -> skip = n; body = uint(b, i + 1, n, rest) ?: return false } // str 8/16/32
                h <= 0xdd -> (if (h == 0xdc) 2 else 4).let { n -> skip = n; items = uint(b, i + 1, n, rest) ?: return false } // array 16/32
                else -> (if (h == 0xde) 2 else 4).let { n -> skip = n; items = 2 * (uint(b, i + 1, n, rest) ?: return false) } // map 16/32
            }
            if (skip > rest || body > rest - skip) return false
            i += 1 + skip + body.toInt()
            if (items < 0) continue
            if (items > b.size - i || depth == maxDepth) return false
            left[++depth] = items
        }
    }

    /** The big-endian unsigned [n]-byte number at [at], or null when the [rest] bytes after the type byte do not hold it. */
    private fun uint(b: ByteArray, at: Int, n: Int, rest: Int): Long? {
        if (n > rest) return null
        var v = 0L
        for (k in 0 until n) v = (v shl 8) or (b[at + k].toLong() and 0xff)
        return v
    }

    /**
     * Whether the JSON text [s] (several values too: coalesced frames) never nests arrays and objects deeper
     * than [maxDepth]. Counts brackets outside strings only; whether it is JSON is the parser's business.
     */
    fun jsonDepthFits(s: String, maxDepth: Int = MAX_FRAME_DEPTH): Boolean {
        var depth = 0
        var inString = false
        var i = 0
        while (i < s.length) {
            val c = s[i++]
            if (inString) {
                if (c == '\\') i++ else if (c == '"') inString = false
            } else {
                when (c) {
                    '"' -> inString = true
                    '[', '{' -> if (++depth > maxDepth) return false
                    ']', '}' -> depth--
                }
            }
        }
        return true
    }

    /** [s] parsed, refused with a [SerializationException] when nested deeper than [maxDepth] (or not JSON). */
    fun parseJson(s: String, maxDepth: Int = MAX_FRAME_DEPTH): JsonElement {
        if (!jsonDepthFits(s, maxDepth)) throw SerializationException("JSON nested deeper than $maxDepth levels")
        return Json.parseToJsonElement(s)
    }
}
