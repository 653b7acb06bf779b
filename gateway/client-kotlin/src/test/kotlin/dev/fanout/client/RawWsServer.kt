package dev.fanout.client

import java.io.BufferedInputStream
import java.io.IOException
import java.io.InputStream
import java.net.InetAddress
import java.net.ServerSocket
import java.net.Socket
import java.security.MessageDigest
import java.util.Base64
import java.util.concurrent.CopyOnWriteArrayList
import java.util.concurrent.atomic.AtomicInteger
import kotlin.concurrent.thread

/**
 * A WebSocket server of RFC 6455's handshake and framing only, on an ephemeral loopback port, for tests that
 * need a server to misbehave in ways no real gateway does: [script] gets each accepted connection (numbered
 * from 0) on a thread of its own, reads its upgrade request, and answers as it likes.
 */
class RawWsServer(private val script: (n: Int, c: Conn) -> Unit) : AutoCloseable {
    private val server = ServerSocket(0, 50, InetAddress.getLoopbackAddress())
    private val count = AtomicInteger()
    private val sockets = CopyOnWriteArrayList<Socket>()

    val url: String get() = "ws://127.0.0.1:${server.localPort}/ws"

    /** Connections accepted so far. */
    val accepted: Int get() = count.get()

    init {
        thread(isDaemon = true, name = "raw-ws-accept") {
            while (true) {
                val s = try {
                    server.accept()
                } catch (e: IOException) {
                    break
                }
                sockets.add(s)
                val n = count.getAndIncrement()
                thread(isDaemon = true, name = "raw-ws-$n") {
                    try {
                        s.use { script(n, Conn(it)) }
                    } catch (e: IOException) {
                        // the client went away
                    }
                }
            }
        }
    }

    override fun close() {
        server.close()
        sockets.forEach { it.close() }
    }

    class Conn(socket: Socket) {
        private val input: InputStream = BufferedInputStream(socket.getInputStream())
        private val out = socket.getOutputStream()

        /** The upgrade request's headers, names in lower case, and its request line under "". */
        val request: Map<String, String> = readHead()

        /** The subprotocol the client asked for first (the wire's), if any. */
        val protocol: String? get() = request["sec-websocket-protocol"]?.split(",")?.first()?.trim()

        /** Completes the upgrade, selecting [protocol]. */
        fun accept(protocol: String? = this.protocol) {
            val key = request["sec-websocket-key"] ?: throw IOException("no Sec-WebSocket-Key")
            val accept = Base64.getEncoder().encodeToString(MessageDigest.getInstance("SHA-1").digest((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").toByteArray()))
            val lines = listOfNotNull("HTTP/1.1 101 Switching Protocols", "Upgrade: websocket", "Connection: Upgrade", "Sec-WebSocket-Accept: $accept", protocol?.let { "Sec-WebSocket-Protocol: $it" })
            out.write((lines.joinToString("\r\n") + "\r\n\r\n").toByteArray())
            out.flush()
        }

        /** Answers the upgrade with HTTP [status] and a JSON [body], as the gateway refuses one. */
        fun refuse(status: Int, reason: String, body: String) {
            val b = body.toByteArray()
            out.write("HTTP/1.1 $status $reason\r\nContent-Type: application/json\r\nContent-Length: ${b.size}\r\nConnection: close\r\n\r\n".toByteArray() + b)
            out.flush()
        }

        fun sendBinary(payload: ByteArray) = send(0x2, payload)

        fun sendText(payload: String) = send(0x1, payload.toByteArray())

        /** One unmasked, final frame of [opcode]. */
        fun send(opcode: Int, payload: ByteArray) {
            val head = when {
                payload.size < 126 -> byteArrayOf((0x80 or opcode).toByte(), payload.size.toByte())
                payload.size < 65_536 -> byteArrayOf((0x80 or opcode).toByte(), 126, (payload.size shr 8).toByte(), payload.size.toByte())
                else -> byteArrayOf((0x80 or opcode).toByte(), 127) + ByteArray(8) { k -> (payload.size.toLong() shr (56 - 8 * k)).toByte() }
            }
            out.write(head + payload)
            out.flush()
        }

        /** The client's next frame as (opcode, unmasked payload); null when the connection ended. */
        fun readFrame(): Pair<Int, ByteArray>? {
            val b0 = input.read()
            val b1 = input.read()
            if (b0 < 0 || b1 < 0) return null
            var len = (b1 and 0x7f).toLong()
            if (len == 126L) len = readN(2)
            if (len == 127L) len = readN(8)
            val mask = if (b1 and 0x80 != 0) input.readNBytes(4) else null
            val payload = input.readNBytes(len.toInt())
            if (mask != null) for (i in payload.indices) payload[i] = (payload[i].toInt() xor mask[i % 4].toInt()).toByte()
            return (b0 and 0x0f) to payload
        }

        /** The code of the client's close frame, reading past any other frames; null when none came. */
        fun readCloseCode(): Int? {
            while (true) {
                val (op, p) = readFrame() ?: return null
                if (op == 0x8) return if (p.size >= 2) ((p[0].toInt() and 0xff) shl 8) or (p[1].toInt() and 0xff) else null
            }
        }

        /** Holds the connection until the client closes it (or the server does). */
        fun hold() {
            while (readFrame() != null) continue
        }

        private fun readN(n: Int): Long = input.readNBytes(n).fold(0L) { v, x -> (v shl 8) or (x.toLong() and 0xff) }

        private fun readHead(): Map<String, String> {
            val lines = ArrayList<String>()
            val line = StringBuilder()
            while (true) {
                val c = input.read()
                if (c < 0) throw IOException("connection closed in the request head")
                if (c == '\n'.code) {
                    val l = line.toString().trimEnd('\r')
                    if (l.isEmpty()) break
                    lines.add(l)
                    line.setLength(0)
                } else {
                    line.append(c.toChar())
                }
            }
            val headers = HashMap<String, String>()
            headers[""] = lines.firstOrNull() ?: ""
            for (l in lines.drop(1)) {
                val at = l.indexOf(':')
                if (at > 0) headers[l.substring(0, at).trim().lowercase()] = l.substring(at + 1).trim()
            }
            return headers
        }
    }
}
