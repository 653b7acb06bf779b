// The Java SDK's runner (centrifuge-java, Protobuf only): drives the SDK from JSON lines on stdin and reports what
// it sees as JSON lines on stdout (gateway/conformance/centrifuge/README.md).
package runner;

import com.google.gson.Gson;
import com.google.gson.GsonBuilder;
import com.google.gson.JsonElement;
import com.google.gson.JsonObject;
import com.google.gson.JsonParser;
import io.github.centrifugal.centrifuge.Client;
import io.github.centrifugal.centrifuge.ClientInfo;
import io.github.centrifugal.centrifuge.ConnectedEvent;
import io.github.centrifugal.centrifuge.ConnectingEvent;
import io.github.centrifugal.centrifuge.ConnectionTokenEvent;
import io.github.centrifugal.centrifuge.ConnectionTokenGetter;
import io.github.centrifugal.centrifuge.DisconnectedEvent;
import io.github.centrifugal.centrifuge.ErrorEvent;
import io.github.centrifugal.centrifuge.EventListener;
import io.github.centrifugal.centrifuge.HistoryOptions;
import io.github.centrifugal.centrifuge.HistoryResult;
import io.github.centrifugal.centrifuge.JoinEvent;
import io.github.centrifugal.centrifuge.LeaveEvent;
import io.github.centrifugal.centrifuge.Options;
import io.github.centrifugal.centrifuge.PresenceResult;
import io.github.centrifugal.centrifuge.PresenceStatsResult;
import io.github.centrifugal.centrifuge.Publication;
import io.github.centrifugal.centrifuge.PublicationEvent;
import io.github.centrifugal.centrifuge.PublishResult;
import io.github.centrifugal.centrifuge.RPCResult;
import io.github.centrifugal.centrifuge.ReplyError;
import io.github.centrifugal.centrifuge.ResultCallback;
import io.github.centrifugal.centrifuge.SubscribedEvent;
import io.github.centrifugal.centrifuge.SubscribingEvent;
import io.github.centrifugal.centrifuge.Subscription;
import io.github.centrifugal.centrifuge.SubscriptionErrorEvent;
import io.github.centrifugal.centrifuge.SubscriptionEventListener;
import io.github.centrifugal.centrifuge.SubscriptionOptions;
import io.github.centrifugal.centrifuge.SubscriptionTokenEvent;
import io.github.centrifugal.centrifuge.SubscriptionTokenGetter;
import io.github.centrifugal.centrifuge.TokenCallback;
import io.github.centrifugal.centrifuge.UnsubscribedEvent;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;

public final class Runner {
  private static final Gson GSON = new GsonBuilder().serializeNulls().create();
  private final Object lock = new Object();
  private volatile int gen; // the scenario's generation: events of an older one are dropped
  private volatile Client client;
  private final Map<String, Subscription> subs = new ConcurrentHashMap<>();
  private final Map<String, Long> last = new ConcurrentHashMap<>(); // per sub, the offset of its last publication
  private volatile String token = ""; // what the token getter hands out (setToken)
  private final Map<String, String> subTokens = new ConcurrentHashMap<>(); // per channel, what a sub's token getter hands out (setSubToken)

  private static Map<String, Object> obj(Object... kv) {
    Map<String, Object> m = new LinkedHashMap<>();
    for (int i = 0; i < kv.length; i += 2) m.put((String) kv[i], kv[i + 1]);
    return m;
  }

  private void write(Map<String, Object> m) {
    synchronized (lock) {
      System.out.println(GSON.toJson(m));
      System.out.flush();
    }
  }

  private void event(int g, Map<String, Object> m) {
    if (g == gen) write(m);
  }

  private static Object decode(byte[] b) {
    String s = new String(b, StandardCharsets.UTF_8);
    try {
      return GSON.fromJson(JsonParser.parseString(s), Object.class);
    } catch (RuntimeException e) {
      return s;
    }
  }

  private static byte[] encode(JsonElement e) {
    return GSON.toJson(e).getBytes(StandardCharsets.UTF_8);
  }

  /** Completes with the callback's result, or with its error. */
  private static <T> CompletableFuture<T> call(java.util.function.Consumer<ResultCallback<T>> op) {
    CompletableFuture<T> f = new CompletableFuture<>();
    op.accept((e, r) -> {
      if (e != null) f.completeExceptionally(e);
      else f.complete(r);
    });
    return f;
  }

  private static String str(JsonObject c, String k) {
    return c.has(k) ? c.get(k).getAsString() : "";
  }

  private static boolean flag(JsonObject c, String k) {
    return c.has(k) && c.get(k).getAsBoolean();
  }

  private Map<String, Object> connect(JsonObject cmd, int g) throws Exception {
    Options opts = new Options();
    opts.setToken(str(cmd, "token"));
    opts.setMinReconnectDelay(50);
    opts.setMaxReconnectDelay(500);
    opts.setTimeout(15_000);
    if (flag(cmd, "refresh")) {
      opts.setTokenGetter(new ConnectionTokenGetter() {
        @Override
        public void getConnectionToken(ConnectionTokenEvent event, TokenCallback cb) {
          event(g, obj("event", "tokenRequested"));
          cb.Done(null, token);
        }
      });
    }
    CompletableFuture<String> connected = new CompletableFuture<>();
    Client c = new Client(str(cmd, "url"), opts, new EventListener() {
      @Override
      public void onConnecting(Client cl, ConnectingEvent e) {
        event(g, obj("event", "connecting", "code", e.getCode(), "reason", e.getReason()));
      }

      @Override
      public void onConnected(Client cl, ConnectedEvent e) {
        event(g, obj("event", "connected", "client", e.getClient()));
        connected.complete(e.getClient());
      }

      @Override
      public void onDisconnected(Client cl, DisconnectedEvent e) {
        event(g, obj("event", "disconnected", "code", e.getCode(), "reason", e.getReason()));
        connected.completeExceptionally(new ReplyError(e.getCode(), "disconnected: " + e.getReason(), false));
      }

      @Override
      public void onError(Client cl, ErrorEvent e) {
        event(g, obj("event", "error", "message", String.valueOf(e.getError())));
      }
    });
    client = c;
    c.connect();
    return obj("client", connected.get(15, TimeUnit.SECONDS));
  }

  private Map<String, Object> subscribe(JsonObject cmd, int g) throws Exception {
    String name = str(cmd, "sub");
    SubscriptionOptions o = new SubscriptionOptions();
    o.setRecoverable(flag(cmd, "recoverable"));
    o.setPositioned(flag(cmd, "positioned"));
    o.setJoinLeave(flag(cmd, "joinLeave"));
    String channel = str(cmd, "channel");
    if (flag(cmd, "subToken")) {
      o.setTokenGetter(new SubscriptionTokenGetter() {
        @Override
        public void getSubscriptionToken(SubscriptionTokenEvent event, TokenCallback cb) {
          event(g, obj("event", "subTokenRequested", "sub", name));
          cb.Done(null, subTokens.getOrDefault(channel, ""));
        }
      });
    }
    Subscription sub = client.newSubscription(channel, o, new SubscriptionEventListener() {
      @Override
      public void onSubscribing(Subscription s, SubscribingEvent e) {
        event(g, obj("event", "subscribing", "sub", name, "code", e.getCode(), "reason", e.getReason()));
      }

      @Override
      public void onSubscribed(Subscription s, SubscribedEvent e) {
        // 0.4.1 keeps the StreamPosition's offset and epoch package-private: not reported.
        event(g, obj("event", "subscribed", "sub", name, "wasRecovering", e.wasRecovering(), "recovered", e.getRecovered(),
            "recoverable", e.getRecoverable(), "positioned", e.getPositioned()));
      }

      @Override
      public void onUnsubscribed(Subscription s, UnsubscribedEvent e) {
        event(g, obj("event", "unsubscribed", "sub", name, "code", e.getCode(), "reason", e.getReason()));
      }

      @Override
      public void onPublication(Subscription s, PublicationEvent e) {
        Map<String, Object> ev = obj("event", "message", "sub", name, "channel", channel, "seq", e.getOffset(), "data", decode(e.getData()));
        Long prev = last.put(name, e.getOffset());
        if (prev != null) ev.put("jump", e.getOffset() - prev);
        event(g, ev);
      }

      @Override
      public void onJoin(Subscription s, JoinEvent e) {
        event(g, obj("event", "join", "sub", name, "user", e.getInfo().getUser(), "client", e.getInfo().getClient()));
      }

      @Override
      public void onLeave(Subscription s, LeaveEvent e) {
        event(g, obj("event", "leave", "sub", name, "user", e.getInfo().getUser(), "client", e.getInfo().getClient()));
      }

      @Override
      public void onError(Subscription s, SubscriptionErrorEvent e) {
        event(g, obj("event", "subError", "sub", name, "message", String.valueOf(e.getError())));
      }
    });
    subs.put(name, sub);
    sub.subscribe();
    return obj();
  }

  private static List<Map<String, Object>> pubs(List<Publication> ps) {
    List<Map<String, Object>> out = new ArrayList<>();
    for (Publication p : ps) out.add(obj("offset", p.getOffset(), "data", decode(p.getData())));
    return out;
  }

  private Map<String, Object> reset() throws InterruptedException {
    gen++;
    Client old = client;
    client = null;
    subs.clear();
    last.clear();
    token = "";
    subTokens.clear();
    if (old != null) old.close(5_000);
    return obj();
  }

  private Map<String, Object> handle(JsonObject cmd) throws Exception {
    int g = gen;
    Client c = client;
    String op = str(cmd, "cmd");
    switch (op) {
      case "connect":
        return connect(cmd, g);
      case "setToken":
        token = str(cmd, "token");
        return obj();
      case "setSubToken":
        subTokens.put(str(cmd, "channel"), str(cmd, "token"));
        return obj();
      case "reset":
      case "close":
        return reset();
      default:
        break;
    }
    if (c == null) throw new IllegalStateException("not connected");
    String channel = str(cmd, "channel");
    switch (op) {
      case "subscribe":
        return subscribe(cmd, g);
      case "unsubscribe":
        subs.get(str(cmd, "sub")).unsubscribe();
        return obj();
      case "publish":
        Runner.<PublishResult>call(cb -> c.publish(channel, encode(cmd.get("data")), cb)).get(15, TimeUnit.SECONDS);
        return obj();
      case "presence": {
        List<String> users = new ArrayList<>();
        for (ClientInfo i : Runner.<PresenceResult>call(cb -> c.presence(channel, cb)).get(15, TimeUnit.SECONDS).getClients().values()) users.add(i.getUser());
        Collections.sort(users);
        return obj("users", users);
      }
      case "presenceStats": {
        PresenceStatsResult s = Runner.<PresenceStatsResult>call(cb -> c.presenceStats(channel, cb)).get(15, TimeUnit.SECONDS);
        return obj("numClients", s.getNumClients(), "numUsers", s.getNumUsers());
      }
      case "history": {
        HistoryOptions opts = new HistoryOptions.Builder().withLimit(cmd.has("limit") ? cmd.get("limit").getAsInt() : 0).withReverse(flag(cmd, "reverse")).build();
        HistoryResult h = Runner.<HistoryResult>call(cb -> c.history(channel, opts, cb)).get(15, TimeUnit.SECONDS);
        return obj("publications", pubs(h.getPublications()), "offset", h.getOffset(), "epoch", h.getEpoch());
      }
      case "rpc": {
        RPCResult r = Runner.<RPCResult>call(cb -> c.rpc(str(cmd, "method"), encode(cmd.get("data")), cb)).get(15, TimeUnit.SECONDS);
        return obj("data", decode(r.getData()));
      }
      default:
        throw new IllegalArgumentException("unknown command " + op);
    }
  }

  private void answer(JsonObject cmd) {
    long id = cmd.get("id").getAsLong();
    try {
      write(obj("id", id, "ok", true, "result", handle(cmd)));
    } catch (Throwable t) {
      Throwable e = t instanceof java.util.concurrent.ExecutionException && t.getCause() != null ? t.getCause() : t;
      if (e instanceof ReplyError) {
        ReplyError r = (ReplyError) e;
        write(obj("id", id, "ok", false, "error", obj("code", String.valueOf(r.getCode()), "temporary", r.isTemporary(), "message", r.getMessage())));
      } else {
        write(obj("id", id, "ok", false, "error", obj("code", "runner", "temporary", false, "message", String.valueOf(e))));
      }
    }
  }

  public static void main(String[] args) throws Exception {
    Runner r = new Runner();
    r.write(obj("event", "adapter", "reset", true));
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    for (String line; (line = in.readLine()) != null; ) {
      JsonObject cmd = JsonParser.parseString(line).getAsJsonObject();
      if ("close".equals(str(cmd, "cmd"))) {
        r.answer(cmd);
        System.exit(0);
      }
      // Each command on its own thread: a step marked async leaves its command in flight.
      new Thread(() -> r.answer(cmd)).start();
    }
    System.exit(0);
  }
}
