"""Test doubles the Fetch handler's tests share: the metadata cache's
lookups of the one topic they fetch ("orders", by id), and ISR writes that
always succeed."""

from __future__ import annotations

import uuid

TOPIC_ID = uuid.uuid5(uuid.NAMESPACE_URL, "orders")


class OrdersTopicCache:
    """What the handler asks the metadata cache besides the partitions:
    "orders" by its id, and no broker endpoints."""

    def topic_by_id(self, topic_id):
        return "orders" if topic_id == TOPIC_ID else None

    def alive_broker(self, broker_id):
        return None


class IsrZnodes:
    """ISR writes that always succeed, changes nobody hears of."""

    async def write_isr(self, tp, state, zk_version):
        return zk_version + 1

    async def isr_changed(self, partitions):
        pass
