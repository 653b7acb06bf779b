import dev.fanout.client.GatewayClient
import dev.fanout.client.GatewayEvent
import dev.fanout.client.StartPosition
import dev.fanout.client.SubscribeOptions
import kotlinx.coroutines.flow.first
import kotlinx.coroutines.runBlocking
import kotlinx.serialization.json.buildJsonObject
import kotlinx.serialization.json.put

fun main() = runBlocking {
    val client = GatewayClient(System.getenv("GATEWAY_URL") ?: "ws://localhost:9000/ws") {
        token = System.getenv("GATEWAY_TOKEN") // or getToken = { fetchToken() }: asked before every connect
    }
    client.addListener { e -> if (e is GatewayEvent.Disconnected) println("disconnected (${e.code}), next try in ${e.reconnectInMs} ms") }
    client.connect()

    val sub = client.subscribe("chat.lobby", SubscribeOptions(from = StartPosition.Last(10)))
    val stored = client.publish("chat.lobby", buildJsonObject { put("text", "hello from Kotlin") })
    println("stored as seq ${stored.seq}")

    val msg = sub.messages.first { it.seq == stored.seq }
    println("${msg.channel} #${msg.seq}: ${msg.data}")
    client.closeAndJoin()
}
