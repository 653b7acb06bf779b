package dev.fanout.client

import java.time.Instant
import java.util.Base64
import kotlin.random.Random
import org.junit.jupiter.api.Assertions.assertArrayEquals
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.assertThrows

/**
 * The API-21 replacements for java.util.Base64 and java.time (the animal-sniffer check in `mvn test` keeps
 * those out of the SDK's classes): held here to what the JDK's own writes, on the JVM where both exist.
 */
class ApiFloorTest {
    @Test
    fun `api 21 — base64 of bytes of every length is what java util Base64 writes, and reads back`() {
        val r = Random(21)
        for (n in 0..300) {
            val bytes = r.nextBytes(n)
            val text = bytes.toBase64()
            assertEquals(Base64.getEncoder().encodeToString(bytes), text, "length $n")
            assertArrayEquals(bytes, base64Bytes(text), "length $n")
        }
    }

    @Test
    fun `api 21 — text that is not base64 is refused with IllegalArgumentException, as the delta path expects`() {
        assertThrows<IllegalArgumentException> { base64Bytes("not base64!") }
        assertThrows<IllegalArgumentException> { deltaBytes(kotlinx.serialization.json.Json.parseToJsonElement("""{"data":"%%","enc":"base64"}""") as kotlinx.serialization.json.JsonObject) }
    }

    @Test
    fun `api 21 — a time position is written as JavaScript's toISOString writes it, for any millisecond`() {
        val r = Random(5)
        val samples = listOf(0L, 1L, 999L, 1_000L, 951_782_400_000L, 1_795_255_200_000L, 4_102_444_799_999L) + List(500) { r.nextLong(0, 4_102_444_800_000L) }
        for (ms in samples) {
            val iso = Instant.ofEpochMilli(ms).toString().let { if (it.length == 20) it.dropLast(1) + ".000Z" else it }
            assertEquals(iso, isoMillis(ms), "$ms ms")
        }
    }
}
