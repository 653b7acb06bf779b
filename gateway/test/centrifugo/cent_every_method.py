"""Calls every server API method through cent (Centrifugo's Python client, PyPI) and prints what each answered.

Usage: cent_every_method.py <api url> <api key> <channel> <user>. Prints one JSON object: per method its
result (model_dump) or {"error": code} for a CentApiResponseError. The Centrifugo server API test runs it.
"""
import json
import sys

from cent import (
    BatchRequest,
    BroadcastRequest,
    ChannelsRequest,
    Client,
    DisconnectRequest,
    HistoryRemoveRequest,
    HistoryRequest,
    InfoRequest,
    PresenceRequest,
    PresenceStatsRequest,
    PublishRequest,
    RefreshRequest,
    SubscribeRequest,
    UnsubscribeRequest,
)
from cent.exceptions import CentApiResponseError

url, key, channel, user = sys.argv[1:5]
client = Client(url, key, timeout=10)
out = {}


def call(name, fn, request):
    try:
        out[name] = fn(request).model_dump(mode="json")
    except CentApiResponseError as e:
        out[name] = {"error": e.code, "message": e.message}


call("publish", client.publish, PublishRequest(channel=channel, data={"from": "python"}, idempotency_key="py-1"))
call("publish_again", client.publish, PublishRequest(channel=channel, data={"from": "python"}, idempotency_key="py-1"))
call("broadcast", client.broadcast, BroadcastRequest(channels=[channel, channel + ".b"], data={"from": "python", "to": "all"}))
call("history", client.history, HistoryRequest(channel=channel, limit=10))
call("presence", client.presence, PresenceRequest(channel=channel))
call("presence_stats", client.presence_stats, PresenceStatsRequest(channel=channel))
call("channels", client.channels, ChannelsRequest(pattern=channel))
call("info", client.info, InfoRequest())
call(
    "batch",
    client.batch,
    BatchRequest(requests=[PublishRequest(channel=channel, data={"in": "batch"}), HistoryRequest(channel=channel, limit=1, reverse=True)], parallel=False),
)
call("subscribe", client.subscribe, SubscribeRequest(user=user, channel=channel))
call("history_remove", client.history_remove, HistoryRemoveRequest(channel=channel))
call("unsubscribe", client.unsubscribe, UnsubscribeRequest(user=user, channel=channel))
call("refresh", client.refresh, RefreshRequest(user=user, expired=True))
call("disconnect", client.disconnect, DisconnectRequest(user=user))
print(json.dumps(out))
