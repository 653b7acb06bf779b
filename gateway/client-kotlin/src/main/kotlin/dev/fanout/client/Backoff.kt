package dev.fanout.client

import kotlin.math.floor
import kotlin.math.min

/**
 * Reconnect delay for attempt [attempt] (0-based): uniform in `[0, min(maxMs, minMs·2^attempt)]` ("full
 * jitter"). [random] gives a number in `[0, 1)`.
 */
fun backoffDelay(attempt: Int, minMs: Long, maxMs: Long, random: () -> Double = Math::random): Long {
    val exp = attempt.coerceIn(0, 52)
    val cap = min(maxMs.toDouble(), minMs.toDouble() * Math.pow(2.0, exp.toDouble()))
    return min(cap, floor(random() * (cap + 1))).toLong()
}
