// Package webview is ibfab serve's live web page of a running fabric.
//
// Why: ibfab status prints a table, which answers "what is the state of
// port X now" but not "what just happened where". A map of the fabric
// with each cable coloured by its ports' state and load, updated as the
// fabric changes, shows at a glance which link a fault took down, which
// node died and where the traffic went instead, while a failure is being
// injected by hand (ibfab link, kill, fault).
//
// What: a Server is an http.Handler for one fabric. One goroutine per
// Server (not per client) polls harness.Status every Config.Interval
// (500 ms by default) and keeps the last second's samples; the
// utilization of a link is its busier end's PortXmitData delta over
// that window, as a share of the port's rate. Each poll's view is built
// and encoded once, when the poll completes, and every request answers
// from the last completed one: under traffic a large fabric's status takes
// seconds to read, and no request waits for it. Endpoints:
//
//   - / the page (assets/, embedded): Cytoscape.js draws the map, laid
//     out in stage rows when the topology is a fat tree
//     (topologies.LayoutFatTree), force-directed (cose) otherwise.
//   - /api/fabric the map as JSON (Fabric).
//   - /api/node/{name} one node's ports, P_Keys, counters, drops and
//     per-VL credits (NodeDetail).
//   - /api/events server-sent events: each port state change, node death
//     and drop increase the poller sees (Event), which the page applies
//     to the map and lists in its timeline.
//   - /metrics Config.Metrics, when set.
//
// A fabric torn down while the page is open makes the API answer 503
// with a JSON error and the page show a banner; Close stops the poller
// and ends the event streams. The page uses no CDN: Cytoscape.js is
// vendored in assets/vendor (its version in VERSION there, re-fetched by
// make vendor-web), so the view works offline.
package webview
