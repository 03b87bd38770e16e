"""Redis: two layer instances (as two processes would have) exchange group messages."""

import uuid

import pytest
from channels_redis.core import RedisChannelLayer

pytestmark = pytest.mark.services


async def test_group_message_crosses_layer_instances(redis_url):
    """A message sent to a group through one instance reaches a channel of the other."""
    prefix = f"poweron-test-{uuid.uuid4().hex[:8]}"
    sender = RedisChannelLayer(hosts=[redis_url], prefix=prefix)
    receiver = RedisChannelLayer(hosts=[redis_url], prefix=prefix)
    try:
        channel = await receiver.new_channel()
        await receiver.group_add("workflow_1", channel)
        await sender.group_send("workflow_1", {"type": "workflow.event", "seq": 7})
        message = await receiver.receive(channel)
        assert message == {"type": "workflow.event", "seq": 7}
        await receiver.group_discard("workflow_1", channel)
    finally:
        await sender.flush()
        await sender.close_pools()
        await receiver.close_pools()
