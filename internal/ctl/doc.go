// Package ctl is the control channel between the harness and a node
// process (ibswitch, ibhca): one JSON request per line on a unix stream
// socket, one JSON response per line back. It is deliberately plain so that
// a user can talk to a node with socat:
//
//	echo '{"op":"status"}' | socat - UNIX-CONNECT:/run/ibfab/default/sw1.sock
//
// A request is {"op":NAME,"args":{...}}; a response is {"ok":true,
// "result":...} or {"ok":false,"error":"..."}. Field names are an interface
// other tools read: they may be added, never renamed.
package ctl
