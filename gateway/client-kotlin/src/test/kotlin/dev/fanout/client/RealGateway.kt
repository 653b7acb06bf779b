package dev.fanout.client

import java.io.File
import java.io.IOException
import java.nio.file.Files
import java.util.UUID
import java.util.concurrent.CompletableFuture
import java.util.concurrent.TimeUnit
import kotlin.concurrent.thread
import kotlinx.serialization.json.Json
import kotlinx.serialization.json.JsonObject
import kotlinx.serialization.json.int
import kotlinx.serialization.json.jsonPrimitive

/**
 * The real gateway, as `npm start` runs it: the CLI from dist/ (`npm run build` first; `npm test` builds before
 * `npm run test:kotlin`) with its embedded nats-server, on ephemeral ports, one worker, no auth, no frame rate limit. Ready when it
 * logs "gateway ready" (its port is in that line); stopped with SIGTERM, which stops its nats-server too. Tests
 * share one for the whole run through [SharedGateway].
 */
class RealGateway : AutoCloseable {
    private val dir: File = Files.createTempDirectory("fgw-kotlin-").toFile()
    private val process: Process
    val port: Int

    val url: String get() = "ws://127.0.0.1:$port/ws"

    init {
        val root = File("../..").canonicalFile
        val cli = File(root, "dist/gateway/fanout-gateway.mjs")
        check(cli.isFile) { "$cli is missing: run `npm run build` before the Kotlin SDK's tests against a real gateway" }
        process = ProcessBuilder("node", cli.path, "--port", "0", "--workers", "1", "--nats-data-dir", File(dir, "nats").path, "--log-level", "info")
            .directory(root)
            .redirectError(File(dir, "stderr.log"))
            // The tests fill channels with hundreds of messages from one connection: no frame rate limit.
            .apply { environment()["FRAME_RATE"] = "-1" }
            .start()
        val ready = CompletableFuture<Int>()
        // Reads every line to the end: a pipe nobody reads would stall the gateway once full.
        thread(isDaemon = true, name = "gateway-stdout") {
            try {
                process.inputStream.bufferedReader().forEachLine { line ->
                    if (!ready.isDone && line.contains("\"gateway ready\"")) {
                        ready.complete((Json.parseToJsonElement(line) as JsonObject).getValue("port").jsonPrimitive.int)
                    }
                }
            } catch (e: IOException) {
                // closed by close()
            }
            ready.completeExceptionally(IllegalStateException("the gateway exited ${process.waitFor()}: ${File(dir, "stderr.log").readText().takeLast(2000)}"))
        }
        port = try {
            ready.get(60, TimeUnit.SECONDS)
        } catch (e: Exception) {
            close()
            throw e
        }
    }

    /** A channel name no other test uses, in the default namespace. */
    fun channel(prefix: String): String = "$prefix.${UUID.randomUUID().toString().take(8)}"

    /**
     * Stops the gateway's processes (SIGSTOP: its worker and nats-server too) without closing a socket: the
     * kernel still accepts connections and takes frames, nobody answers. [thaw] lets them go on where they were.
     */
    fun freeze() = signal("STOP")

    fun thaw() = signal("CONT")

    private fun signal(name: String) {
        val pids = listOf(process.pid()) + process.descendants().map { it.pid() }.toList()
        val kill = ProcessBuilder(listOf("kill", "-$name") + pids.map { it.toString() }).inheritIO().start()
        check(kill.waitFor() == 0) { "kill -$name $pids failed" }
    }

    override fun close() {
        if (process.isAlive) signal("CONT") // a test that failed while frozen
        process.destroy()
        if (!process.waitFor(15, TimeUnit.SECONDS)) process.destroyForcibly().waitFor()
        dir.deleteRecursively()
    }
}
