// Live refresh: an element with data-refresh-ms is fetched again from the
// page's own URL every so often and its contents replaced; while the
// console does not answer, a banner says so and the last state stays.
(function () {
  const live = document.getElementById("live");
  if (!live) return;
  const every = parseInt(live.dataset.refreshMs || "0", 10);
  if (!every) return;
  const banner = document.getElementById("offline");
  let busy = false;
  async function refresh() {
    if (busy || document.hidden) return;
    busy = true;
    try {
      const url = new URL(window.location.href);
      url.searchParams.delete("notice");
      const resp = await fetch(url, {headers: {"X-Live-Refresh": "1"}, cache: "no-store"});
      const html = await resp.text();
      const fresh = new DOMParser().parseFromString(html, "text/html").getElementById("live");
      if (fresh) live.innerHTML = fresh.innerHTML;
      banner.hidden = true;
      live.dataset.refreshedAt = String(Date.now());
    } catch (e) {
      banner.hidden = false;
    } finally {
      busy = false;
    }
  }
  setInterval(refresh, every);
})();
