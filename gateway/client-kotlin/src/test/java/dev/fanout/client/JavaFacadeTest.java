package dev.fanout.client;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertThrows;

import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.api.parallel.ResourceAccessMode;
import org.junit.jupiter.api.parallel.ResourceLock;

/** The Java facade from Java: futures for connect, publish, history and rpc, a callback subscription. */
@ExtendWith(SharedGateway.class)
@ResourceLock(value = SharedGateway.LOCK, mode = ResourceAccessMode.READ)
class JavaFacadeTest {
    @Test
    void javaFacadeConnectsPublishesReadsHistoryAndSubscribes(RealGateway gateway) throws Exception {
        String channel = gateway.channel("kt.java");
        GatewayClientOptions options = new GatewayClientOptions();
        options.setRpcTimeoutMs(5_000);
        try (JavaGatewayClient client = new JavaGatewayClient(new GatewayClient(gateway.getUrl(), options))) {
            client.connect().get(30, TimeUnit.SECONDS);
            // The stream's seqs are shared with the other tests' channels: this channel's first is wherever it falls.
            long first = client.publish(channel, "{\"n\":1}").get(30, TimeUnit.SECONDS).getSeq();

            HistoryPage page = client.history(channel, first, 10).get(30, TimeUnit.SECONDS);
            assertEquals(first, page.getMessages().get(0).getSeq());
            assertEquals("{\"n\":1}", page.getMessages().get(0).getData().toString());

            List<String> got = new CopyOnWriteArrayList<>();
            CountDownLatch two = new CountDownLatch(2);
            CompletableFuture<Throwable> ended = new CompletableFuture<>();
            SubscribeOptions from1 = new SubscribeOptions(new StartPosition.Seq(first, null));
            Subscription sub = client.subscribe(channel, from1, m -> {
                got.add(m.getData().toString());
                two.countDown();
            }, ended::complete).get(30, TimeUnit.SECONDS);
            client.publish(channel, "{\"n\":2}").get(30, TimeUnit.SECONDS);
            assertEquals(true, two.await(30, TimeUnit.SECONDS));
            assertEquals(List.of("{\"n\":1}", "{\"n\":2}"), got);
            sub.unsubscribe();
            assertNull(ended.get(30, TimeUnit.SECONDS), "unsubscribe ends the callbacks normally");

            // No rpc backend on this gateway: the future fails with the server's GatewayException.
            ExecutionException e = assertThrows(ExecutionException.class, () -> client.rpc("echo", "{}").get(30, TimeUnit.SECONDS));
            assertInstanceOf(GatewayException.class, e.getCause());
        }
    }
}
