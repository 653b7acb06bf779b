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

/** The Java facade from Java: futures for connect, publish, history and rpc, a callback subscription. */
class JavaFacadeTest {
    @Test
    void javaFacadeConnectsPublishesReadsHistoryAndSubscribes() throws Exception {
        try (RealGateway gateway = new RealGateway()) {
            String channel = gateway.channel("kt.java");
            GatewayClientOptions options = new GatewayClientOptions();
            options.setRpcTimeoutMs(5_000);
            try (JavaGatewayClient client = new JavaGatewayClient(new GatewayClient(gateway.getUrl(), options))) {
                client.connect().get(30, TimeUnit.SECONDS);
                assertEquals(1L, client.publish(channel, "{\"n\":1}").get(30, TimeUnit.SECONDS).getSeq());

                HistoryPage page = client.history(channel, 1L, 10).get(30, TimeUnit.SECONDS);
                assertEquals("{\"n\":1}", page.getMessages().get(0).getData().toString());

                List<String> got = new CopyOnWriteArrayList<>();
                CountDownLatch two = new CountDownLatch(2);
                CompletableFuture<Throwable> ended = new CompletableFuture<>();
                SubscribeOptions from1 = new SubscribeOptions(new StartPosition.Seq(1, null));
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
}
