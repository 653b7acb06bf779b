package dev.fanout.client

import kotlin.random.Random
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test

class BackoffTest {
    @Test
    fun `backoff — every delay lies in 0 to min(max, min·2^attempt), and both ends are reached`() {
        val r = Random(7)
        for (attempt in 0..20) {
            val cap = minOf(15_000L, 250L shl minOf(attempt, 20))
            val delays = List(2_000) { backoffDelay(attempt, 250, 15_000) { r.nextDouble() } }
            assertTrue(delays.all { it in 0..cap }, "attempt $attempt: outside [0, $cap]")
            assertTrue(delays.max() > cap * 0.95 && delays.min() < cap * 0.05, "attempt $attempt: not spread over [0, $cap]")
        }
    }

    @Test
    fun `backoff — the largest random number gives the cap, not more`() {
        assertEquals(400, backoffDelay(3, 50, 400) { 0.9999999999 })
        assertEquals(0, backoffDelay(0, 0, 0) { 0.9999 })
    }
}
