package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"strconv"
	"strings"
)

// statusHeader asks the built-in upstream for a status other than 200.
const statusHeader = "x-echo-status"

// maxEchoBody bounds the request body the built-in upstream reads.
const maxEchoBody = 1 << 20

// startEcho serves the built-in upstream, a stand-in for trying rules:
// a JSON echo of the request (method, uri, host, headers, body), or, for a
// POST to .../chat/completions, a Chat Completions answer (echo_chat.go),
// for a POST to .../mcp or .../rpc, JSON-RPC results (echo_mcp.go);
// 200 unless the request's x-echo-status names another status.
func startEcho(errLog *log.Logger) (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{ErrorLog: errLog, Handler: http.HandlerFunc(serveEcho)}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			errLog.Printf("echo upstream: %v", err)
		}
	}()
	return "http://" + ln.Addr().String(), func() { srv.Close() }, nil
}

func serveEcho(w http.ResponseWriter, r *http.Request) {
	status, err := echoStatus(r.Header)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	if r.Method == http.MethodPost && strings.HasSuffix(r.URL.Path, "/chat/completions") {
		serveChat(w, r, status)
		return
	}
	if r.Method == http.MethodPost && isRPCPath(r.URL.Path) {
		serveRPC(w, r, status)
		return
	}
	body, _ := io.ReadAll(io.LimitReader(r.Body, maxEchoBody))
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]any{
		"upstream": "echo",
		"method":   r.Method,
		"uri":      r.RequestURI,
		"host":     r.Host,
		"headers":  r.Header,
		"body":     string(body),
	})
}

// echoStatus is the status x-echo-status asks for, 200 without it.
func echoStatus(h http.Header) (int, error) {
	v := h.Get(statusHeader)
	if v == "" {
		return http.StatusOK, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 200 || n > 599 {
		return 0, fmt.Errorf("%s %q: want a status from 200 to 599", statusHeader, v)
	}
	return n, nil
}
