/* KernelHub.live(path, onMessage, options): a websocket to ws(s)://<this host><path> that reconnects.
 *
 * onMessage gets each message parsed from JSON. options.onState(state) hears "connecting", "open" and
 * "closed"; options.indicator (an element) gets data-state set the same way. Returns {close()}.
 * Reconnects with a growing delay (1 s doubling to 15 s), because runners report for minutes and a
 * proxy or server restart must not leave a page silently stale.
 */
(function () {
  "use strict";

  function live(path, onMessage, options) {
    options = options || {};
    var scheme = window.location.protocol === "https:" ? "wss://" : "ws://";
    var url = scheme + window.location.host + path;
    var delay = 1000;
    var socket = null;
    var stopped = false;
    var timer = null;

    function setState(state) {
      if (options.indicator) { options.indicator.setAttribute("data-state", state); }
      if (options.onState) { options.onState(state); }
    }

    function connect() {
      setState("connecting");
      socket = new WebSocket(url);
      socket.onopen = function () { delay = 1000; setState("open"); };
      socket.onmessage = function (event) {
        var data;
        try { data = JSON.parse(event.data); } catch (e) { return; }
        try { onMessage(data); } catch (e) { if (window.console) { console.error(e); } }
      };
      socket.onclose = function () {
        setState("closed");
        if (stopped) { return; }
        timer = window.setTimeout(connect, delay);
        delay = Math.min(delay * 2, 15000);
      };
    }

    connect();
    return {
      close: function () {
        stopped = true;
        if (timer) { window.clearTimeout(timer); }
        if (socket) { socket.close(); }
      }
    };
  }

  window.KernelHub = window.KernelHub || {};
  window.KernelHub.live = live;
})();
