package dev.fanout.client

import java.util.logging.Level
import java.util.logging.Logger
import kotlinx.coroutines.CoroutineDispatcher
import kotlinx.coroutines.CoroutineScope
import kotlinx.coroutines.channels.Channel
import kotlinx.coroutines.launch

/** How bad a [GatewayLogHandler] line is. */
enum class LogLevel { DEBUG, INFO, WARN, ERROR }

/** Receives what the client has to say about itself; called on any of its threads, so keep it cheap. */
fun interface GatewayLogHandler {
    fun log(level: LogLevel, message: String, error: Throwable?)

    companion object {
        /** java.util.logging's logger `dev.fanout.client`: logcat on Android, stderr on the JVM by default. */
        val JAVA_LOGGING = GatewayLogHandler { level, message, error ->
            val jul = when (level) {
                LogLevel.DEBUG -> Level.FINE
                LogLevel.INFO -> Level.INFO
                LogLevel.WARN -> Level.WARNING
                LogLevel.ERROR -> Level.SEVERE
            }
            Logger.getLogger("dev.fanout.client").log(jul, message, error)
        }

        /** Says nothing. */
        val NONE = GatewayLogHandler { _, _, _ -> }
    }
}

/**
 * The app's callbacks (listeners, `onPresence`, `onAutoMessage`), one at a time and in the order they were
 * posted: at once on the posting thread without a dispatcher, else from a queue that one coroutine on
 * [dispatcher] drains. Closing lets the queue drain, then ends that coroutine.
 */
internal class Callbacks(dispatcher: CoroutineDispatcher?, private val log: GatewayLogHandler) {
    private val queue: Channel<() -> Unit>? = dispatcher?.let { Channel(Channel.UNLIMITED) }

    init {
        if (dispatcher != null && queue != null) CoroutineScope(dispatcher).launch { for (f in queue) run(f) }
    }

    /** Runs [f]; what it throws goes to the log handler (the callers catch what they can name better). */
    fun post(f: () -> Unit) {
        if (queue == null) run(f) else queue.trySend(f)
    }

    private fun run(f: () -> Unit) {
        try {
            f()
        } catch (e: Exception) {
            log.log(LogLevel.ERROR, "fanout client: a callback threw: $e", e)
        }
    }

    fun close() {
        queue?.close()
    }

    fun warn(message: String, error: Throwable?) = log.log(LogLevel.WARN, message, error)
}
