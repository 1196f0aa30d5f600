"""The message browser of a topic: partitions, start (earliest, latest,
offset, timestamp), pages forward and back, filters on key, value or
header, decoding as text, pretty JSON or hex, headers, timestamps and
transaction markers; and a form producing one record (key, value,
headers, optional partition)."""

from __future__ import annotations

from urllib.parse import quote, urlencode

from starlette.requests import Request
from starlette.routing import Route

from kavka.common.errors import KafkaError
from kavka.console import browse, forms
from kavka.console.forms import FormError
from kavka.console.service import describe_error
from kavka.console.web import Web, form_of


def routes(web: Web) -> list[Route]:
    async def page(request: Request, status: int = 200, error: str | None = None, produce_form=None):
        name = forms.topic_name(request.path_params["name"])
        count = await web.service.partition_count(name)
        params = dict(request.query_params)
        params.pop("notice", None)
        result = None
        query_error = None
        try:
            q = browse.parse_query(params, count)
        except FormError as e:
            q = browse.BrowseQuery(tuple(range(count)))
            query_error = str(e)
            status = 400
        if query_error is None:
            result = await web.service.browse(name, q)

        def link(positions) -> str:
            keep = {k: v for k, v in params.items() if k not in ("pos", "start", "at") and v}
            keep["pos"] = browse.format_positions(positions)
            return f"/topics/{quote(name)}/messages?{urlencode(keep)}"
        shown = []
        if result is not None:
            for r in result.records:
                key, key_note = browse.decode(r.key, q.decode)
                if key_note == browse.NOT_JSON:
                    key_note = None  # keys are seldom JSON: plain text says enough
                value, value_note = browse.decode(r.value, q.decode)
                shown.append({"r": r, "key": key, "key_note": key_note, "value": value, "value_note": value_note,
                              "headers": [(h, browse.decode(v, "text")[0]) for h, v in r.headers]})
        nav = {}
        if result is not None:
            if any(result.next_positions[p] < result.log_ends[p] for p in result.next_positions):
                nav["next"] = link(result.next_positions)
            back = browse.previous_positions(result.started, result.log_starts, q.limit)
            if back is not None:
                nav["prev"] = link(back)
        return web.render(request, "messages.html", status, topic=name, count=count, q=q, params=params,
                          result=result, shown=shown, pager=nav, error=error or query_error,
                          produce=produce_form or {})

    @web.page("Messages")
    async def messages(request: Request):
        return await page(request)

    @web.page("Produce")
    async def produce(request: Request):
        name = forms.topic_name(request.path_params["name"])
        form = await form_of(request)
        try:
            count = await web.service.partition_count(name)
            key_text = forms.text(form, "key", "key")
            value = forms.text(form, "value", "value")
            headers = forms.headers(forms.text(form, "headers", "headers"))
            raw_p = forms.text(form, "partition", "partition", max_len=20).strip()
            partition = forms.integer(raw_p, "partition", high=count - 1) if raw_p else None
            if partition is not None and partition >= count:
                raise FormError(f"partition {partition} does not exist (the topic has {count})")
            md = await web.service.produce(name, key_text.encode("utf-8") if key_text else None,
                                           value.encode("utf-8") if form.get("null_value") != "1" else None,
                                           headers, partition)
        except (FormError, KafkaError) as e:
            message = str(e) if isinstance(e, FormError) else describe_error(e)
            return await page(request, 400 if isinstance(e, FormError) else 502,
                              f"Record not produced: {message}", form)
        target = f"/topics/{quote(name)}/messages?" + urlencode(
            {"partition": str(md.partition), "start": "offset", "at": str(md.offset)})
        return web.done(target, f"Produced to partition {md.partition} at offset {md.offset}")

    return [Route("/topics/{name}/messages", messages),
            Route("/topics/{name}/produce", produce, methods=["POST"])]
