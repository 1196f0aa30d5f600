"""Reassignment and preferred-leader election.

Reassignment: choose a topic's partitions and target brokers (or spread
evenly over the live brokers), see the proposed plan (editable JSON, the
format of kafka-reassign-partitions), execute it with an optional
throttle, watch the controller's progress (the replicas while moving, the
ones being added and removed, the ISR, the bytes each added replica holds
against its leader's) refreshed live until done, cancel, and remove the
throttle once done. Election: preferred leader for one topic or all."""

from __future__ import annotations

from starlette.requests import Request
from starlette.routing import Route

from kavka.common.errors import ErrorCode, KafkaError
from kavka.common.topic_partition import TopicPartition
from kavka.console import forms, reassignment
from kavka.console.forms import FormError
from kavka.console.service import describe_error
from kavka.console.web import Web, form_of
from kavka.tools.reassign_plan import MoveStatus, PlanError, move_status

MAX_PLAN = 1 << 20


def routes(web: Web) -> list[Route]:
    svc = web.service

    async def progress() -> dict:
        md = await svc.metadata()
        ongoing = await svc.reassignments()
        rows = []
        brokers = {b for o in ongoing.values() for b in o.replicas} & set(md.brokers)
        sizes = await svc.replica_sizes(brokers) if ongoing else {}
        for tp, o in sorted(ongoing.items(), key=lambda kv: (kv[0].topic, kv[0].partition)):
            p = md.partition(tp)
            leader = p.leader if p is not None else -1
            lsizes = sizes.get(leader)
            leader_size = lsizes.get(tp) if isinstance(lsizes, dict) else None
            copied: dict[int, tuple[int | None, str | None]] = {}
            for b in o.adding:
                bs = sizes.get(b)
                if isinstance(bs, dict):
                    copied[b] = (bs.get(tp), None)
                else:
                    copied[b] = (None, bs or "not in the cluster metadata")
            rows.append({"tp": tp, "o": o, "isr": p.isr if p else (), "leader": leader,
                         "leader_size": leader_size, "copied": copied})
        last = []
        for m in svc.last_moves:
            tp = TopicPartition(m.topic, m.partition)
            p = md.partition(tp)
            st = move_status(m, p.replicas if p else None, tp in ongoing)
            last.append({"m": m, "status": st, "replicas": p.replicas if p else None})
        done = bool(last) and all(x["status"] is not MoveStatus.IN_PROGRESS for x in last)
        return {"rows": rows, "last": last, "done": done, "throttle": svc.throttle,
                "topics": sorted(t for t in md.topics if not md.topics[t].is_internal),
                "live": sorted(md.brokers)}

    async def render(request: Request, status: int = 200, error: str | None = None, **extra):
        try:
            state = await progress()
        except KafkaError as e:
            state = {"rows": [], "last": [], "done": False, "throttle": svc.throttle, "topics": [], "live": [],
                     "state_error": describe_error(e)}
        return web.render(request, "reassign.html", status, error=error, form=extra.pop("form", {}),
                          proposed=extra.pop("proposed", None), **state)

    @web.page("Reassignment")
    async def page(request: Request):
        return await render(request)

    async def assignment_of(topics) -> dict[tuple[str, int], tuple[int, ...]]:
        md = await svc.metadata()
        return {(t, p.partition): p.replicas for t in topics if t in md.topics for p in md.topics[t].partitions}

    @web.page("Reassignment plan")
    async def propose(request: Request):
        form = await form_of(request)
        try:
            topic = forms.topic_name(forms.text(form, "topic", "topic", required=True, max_len=400).strip())
            count = await svc.partition_count(topic)
            parts = forms.partition_list(forms.text(form, "partitions", "partitions", max_len=10_000), count)
            spread = form.get("spread") == "1"
            brokers = None if spread else forms.broker_ids(forms.text(form, "brokers", "target brokers",
                                                                      max_len=10_000), "target brokers")
            assignment = await assignment_of([topic])
            moves = reassignment.propose(assignment, svc.cluster.metadata.brokers, topic, parts, brokers)
        except (FormError, PlanError, KafkaError) as e:
            message = describe_error(e) if isinstance(e, KafkaError) else str(e)
            return await render(request, 400, f"No plan: {message}", form=form)
        current = [(m, assignment[(m.topic, m.partition)]) for m in moves]
        return await render(request, form=form, proposed={"json": reassignment.format_plan(moves),
                                                          "current": current})

    @web.page("Execute reassignment")
    async def execute(request: Request):
        form = await form_of(request)
        try:
            moves = reassignment.parse_plan(forms.text(form, "plan", "plan", required=True, max_len=MAX_PLAN))
            assignment = await assignment_of({m.topic for m in moves})
            moves = reassignment.check(moves, assignment, svc.cluster.metadata.brokers)
            raw = forms.text(form, "throttle", "throttle", max_len=30).strip()
            throttle = None
            if raw:
                throttle = reassignment.throttle(moves, assignment, forms.integer(raw, "throttle (bytes/s)", low=1))
            ongoing = await svc.reassignments()
            busy = [str(TopicPartition(m.topic, m.partition)) for m in moves
                    if TopicPartition(m.topic, m.partition) in ongoing]
            if busy:
                raise PlanError(f"a reassignment is already in progress for {', '.join(busy)}; "
                                "wait for it or cancel it first")
            if throttle is not None:
                await svc.set_throttle(throttle)
            results = await svc.start_reassignment(moves)
        except (FormError, PlanError, KafkaError) as e:
            message = describe_error(e) if isinstance(e, KafkaError) else str(e)
            return await render(request, 400 if not isinstance(e, KafkaError) else 409,
                                f"Not started: {message}", form=form)
        failed = {tp: r for tp, r in results.items() if r[0] is not ErrorCode.NONE}
        if failed:
            detail = "; ".join(f"{tp}: {code.name} {msg or code.message}" for tp, (code, msg) in sorted(
                failed.items(), key=lambda kv: (kv[0].topic, kv[0].partition)))
            return await render(request, 409, f"The controller refused: {detail}", form=form)
        return web.done("/reassign", f"Started the reassignment of {len(moves)} partition(s)")

    @web.page("Cancel reassignment")
    async def cancel(request: Request):
        results = await svc.cancel_reassignments()
        if not results:
            return web.done("/reassign", "No reassignment was in progress")
        failed = [f"{tp}: {c.name}" for tp, (c, _m) in results.items()
                  if c not in (ErrorCode.NONE, ErrorCode.NO_REASSIGNMENT_IN_PROGRESS)]
        if failed:
            return await render(request, 409, "Not cancelled: " + "; ".join(failed))
        return web.done("/reassign", f"Cancelled the reassignment of {len(results)} partition(s)")

    @web.page("Remove throttle")
    async def unthrottle(request: Request):
        if svc.throttle is None:
            return web.done("/reassign", "No throttle was set by this console")
        await svc.clear_throttle()
        return web.done("/reassign", "Removed the replication throttle")

    @web.page("Leader election")
    async def elect(request: Request):
        results = None
        error = None
        status = 200
        if request.method == "POST":
            form = await form_of(request)
            raw = forms.text(form, "topic", "topic", max_len=400).strip()
            try:
                partitions = None
                if raw and raw != "all":
                    topic = forms.topic_name(raw)
                    count = await svc.partition_count(topic)
                    partitions = [TopicPartition(topic, p) for p in range(count)]
                results = sorted((await svc.elect_preferred(partitions)).items(),
                                 key=lambda kv: (kv[0].topic, kv[0].partition))
            except (FormError, KafkaError) as e:
                status = 400 if isinstance(e, FormError) else 409
                error = f"No election: {describe_error(e) if isinstance(e, KafkaError) else e}"
        try:
            md = await svc.metadata()
            topics = sorted(t for t in md.topics if not md.topics[t].is_internal)
            not_preferred = [(t.name, p.partition, p.leader, p.replicas[0]) for t in md.topics.values()
                             for p in t.partitions if p.replicas and p.leader != p.replicas[0]]
        except KafkaError as e:
            topics, not_preferred = [], []
            error = error or describe_error(e)
        return web.render(request, "elect.html", status, results=results, error=error, topics=topics,
                          not_preferred=sorted(not_preferred), ElectionNotNeeded=ErrorCode.ELECTION_NOT_NEEDED)

    return [Route("/reassign", page), Route("/reassign/plan", propose, methods=["POST"]),
            Route("/reassign/execute", execute, methods=["POST"]),
            Route("/reassign/cancel", cancel, methods=["POST"]),
            Route("/reassign/unthrottle", unthrottle, methods=["POST"]),
            Route("/elect", elect, methods=["GET", "POST"])]
