"""Consumer groups: the list (state, protocol, coordinator), a group's page
(members and their assignments, committed offset, end offset and lag per
partition, total lag, refreshed live), resetting its offsets for a topic
to earliest, latest, a timestamp or an offset (a dry run shows the plan
first; executing is refused while the group has members, as Kafka's tool
refuses), and deleting it (the coordinator refuses a group with members:
NON_EMPTY_GROUP)."""

from __future__ import annotations

from urllib.parse import quote

from starlette.requests import Request
from starlette.routing import Route

from kavka.common.errors import KafkaError
from kavka.console import forms
from kavka.console.forms import FormError
from kavka.console.service import describe_error
from kavka.console.web import Web, form_of

RESET_TARGETS = ("earliest", "latest", "timestamp", "offset")
MAX_GROUP_ID = 1000


def _group_id(request: Request) -> str:
    group = request.path_params["group"]
    if not group or len(group) > MAX_GROUP_ID:
        raise FormError(f"a group id must have 1 to {MAX_GROUP_ID} characters")
    return group


def routes(web: Web) -> list[Route]:
    @web.page("Consumer groups")
    async def listing(request: Request):
        try:
            groups, errors = await web.service.list_groups()
        except KafkaError as e:
            groups, errors = [], [describe_error(e)]
        return web.render(request, "groups.html", groups=groups, errors=errors)

    async def detail(request: Request, status: int = 200, error: str | None = None, plan=None, form=None):
        group = _group_id(request)
        view = await web.service.group(group)
        return web.render(request, "group.html", status, view=view, error=error, plan=plan, form=form or {},
                          targets=RESET_TARGETS)

    @web.page("Consumer group")
    async def group(request: Request):
        return await detail(request)

    @web.page("Reset offsets")
    async def reset(request: Request):
        group = _group_id(request)
        form = await form_of(request)
        try:
            topic = forms.topic_name(forms.text(form, "topic", "topic", required=True, max_len=400).strip())
            target = forms.text(form, "to", "reset to", max_len=20).strip()
            if target not in RESET_TARGETS:
                raise FormError(f"reset to must be one of {', '.join(RESET_TARGETS)}, got {target[:20]!r}")
            raw = forms.text(form, "at", "value", max_len=60).strip()
            value = None
            if target == "timestamp":
                value = forms.timestamp_ms(raw, "reset timestamp")
            elif target == "offset":
                value = forms.integer(raw, "reset offset")
            desc, plan = await web.service.reset_plan(group, topic, target, value)
            if form.get("execute") != "1":
                return await detail(request, plan=sorted(plan.items(), key=lambda kv: kv[0].partition), form=form)
            await web.service.reset_offsets(group, {tp: new for tp, (_old, new) in plan.items()})
        except (FormError, KafkaError) as e:
            message = str(e) if isinstance(e, FormError) else describe_error(e)
            return await detail(request, 400 if isinstance(e, FormError) else 409,
                                f"Offsets not reset: {message}", form=form)
        moved = ", ".join(f"{tp.partition}->{new}" for tp, (_o, new) in sorted(plan.items(), key=lambda kv: kv[0].partition))
        return web.done(f"/groups/{quote(group)}", f"Reset group {group} on {topic}: {moved}")

    @web.page("Delete group")
    async def delete(request: Request):
        group = _group_id(request)
        form = await form_of(request)
        if forms.text(form, "confirm", "confirmation", max_len=MAX_GROUP_ID + 10).strip() != group:
            return await detail(request, 400, f"Not deleted: type the group's id ({group}) to confirm")
        try:
            await web.service.delete_group(group)
        except KafkaError as e:
            return await detail(request, 409, f"Group not deleted: {describe_error(e)}")
        return web.done("/groups", f"Deleted group {group}")

    return [Route("/groups", listing), Route("/groups/{group}", group),
            Route("/groups/{group}/reset", reset, methods=["POST"]),
            Route("/groups/{group}/delete", delete, methods=["POST"])]


