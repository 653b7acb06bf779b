package dev.fanout.client

import java.io.File
import java.nio.file.Files
import java.nio.file.StandardCopyOption
import kotlinx.coroutines.delay
import kotlinx.coroutines.runBlocking

/**
 * The process CrashResumeTest kills: subscribes to a channel from its start with a slow collector and, after
 * handling each message (appending its seq to `<file>.handled`), saves the message's position (`seq epoch`) to
 * the file, as the README tells an app to, then prints its seq. Arguments: the gateway's URL, the channel, the file.
 */
fun main(args: Array<String>) = runBlocking {
    val (url, channel, path) = args
    val file = File(path)
    val temp = File("$path.tmp")
    val handled = File("$path.handled")
    val client = GatewayClient(url)
    client.connect()
    val sub = client.subscribe(channel, SubscribeOptions(from = StartPosition.All))
    sub.messages.collect { m ->
        delay(3) // the app's work on the message
        handled.appendText("${m.seq}\n")
        temp.writeText("${m.seq} ${m.epoch}")
        Files.move(temp.toPath(), file.toPath(), StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING)
        println(m.seq)
    }
}
