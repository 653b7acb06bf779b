package dev.fanout.client

import java.io.File
import java.nio.file.Files
import java.util.concurrent.TimeUnit
import kotlinx.coroutines.flow.take
import kotlinx.coroutines.flow.toList
import kotlinx.coroutines.runBlocking
import kotlinx.coroutines.withTimeout
import kotlinx.serialization.json.JsonPrimitive
import org.junit.jupiter.api.Assertions.assertEquals
import org.junit.jupiter.api.Assertions.assertTrue
import org.junit.jupiter.api.Test
import org.junit.jupiter.api.extension.ExtendWith
import org.junit.jupiter.api.parallel.ResourceAccessMode
import org.junit.jupiter.api.parallel.ResourceLock

/**
 * The README's save-and-resume pattern through a real crash: a second JVM (CrashSubscriber.kt) handles a
 * channel slowly, saving each handled message's position, and is killed (SIGKILL) mid-stream; a new client
 * resumes from the saved position and gets every later message once, in order.
 */
@ExtendWith(SharedGateway::class)
@ResourceLock(SharedGateway.LOCK, mode = ResourceAccessMode.READ)
class CrashResumeTest(private val gateway: RealGateway) {
    /** The test JVM's own classes and dependencies, as scripts/run-test-main.sh starts a main of the tests. */
    private fun testClasspath(): String {
        val target = File("target")
        val deps = File(target, "test-classpath.txt").readText().trim()
        return listOf(File(target, "classes").absolutePath, File(target, "test-classes").absolutePath, deps).joinToString(File.pathSeparator)
    }

    @Test
    fun `positions — a JVM killed mid-stream with a slow collector resumes from its saved position, every later message once and in order`() {
        val channel = gateway.channel("kt.crash")
        val stored = 400
        val killAt = 100
        val dir = Files.createTempDirectory("fgw-crash-").toFile()
        val file = File(dir, "position")
        val client = GatewayClient(gateway.url)
        // The stream's seqs are shared with the other tests' channels: the test counts the channel's own messages,
        // the nth one stored being n (seqs[n - 1]).
        val seqs = mutableListOf<Long>()
        runBlocking {
            withTimeout(120_000) {
                client.connect()
                for (chunk in (1..stored).chunked(100)) {
                    seqs += client.publishBatch(chunk.map { BatchItem(channel, JsonPrimitive(it)) }).map { (it as BatchItemResult.Stored).seq }
                }
            }
        }
        fun nth(seq: Long): Int = seqs.indexOf(seq).also { assertTrue(it >= 0, "seq $seq is not one of the channel's") } + 1
        val java = File(System.getProperty("java.home"), "bin/java").path
        val child = ProcessBuilder(java, "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1", "-cp", testClasspath(), "dev.fanout.client.CrashSubscriberKt", gateway.url, channel, file.path)
            .redirectError(File(dir, "stderr.log"))
            .start()
        var printed = 0
        try {
            // Each line is a message handled and saved: kill as soon as the killAt-th is.
            val lines = child.inputStream.bufferedReader()
            while (printed < killAt) printed = nth(lines.readLine()?.toLong() ?: error("the subscriber exited: ${File(dir, "stderr.log").readText().takeLast(2000)}"))
        } finally {
            child.destroyForcibly()
            assertTrue(child.waitFor(30, TimeUnit.SECONDS))
        }
        val (seqText, epoch) = file.readText().split(" ")
        val saved = StreamPosition(seqText.toLong(), epoch)
        val savedN = nth(saved.seq)
        assertTrue(savedN in killAt until stored, "killed mid-stream at $saved, message $savedN")
        val handled = File(dir, "position.handled").readLines().map { nth(it.toLong()) }
        assertEquals((1..handled.size).toList(), handled, "the subscriber handled each message once, in order")
        // The kill may fall between handling a message and saving its position: that one comes again.
        assertTrue(savedN == handled.last() || savedN == handled.last() - 1, "saved message $savedN, handled up to ${handled.last()}")
        runBlocking {
            withTimeout(120_000) {
                // Messages published after the crash come after the stored ones.
                seqs += client.publish(channel, JsonPrimitive(stored + 1)).seq
                val sub = client.subscribe(channel, SubscribeOptions(from = saved.next()))
                val rest = sub.messages.take(stored + 1 - savedN).toList()
                assertEquals((savedN + 1..stored + 1).toList(), rest.map { nth(it.seq) })
                // Nothing the crashed process did not handle is lost, nothing is handled twice past the saved position.
                assertEquals((1..stored + 1).toList(), handled.filter { it <= savedN } + rest.map { nth(it.seq) })
                assertEquals((savedN + 1..stored + 1).toList(), rest.map { (it.data as JsonPrimitive).content.toInt() })
                client.closeAndJoin()
            }
        }
        dir.deleteRecursively()
    }
}
