package main

import (
	"encoding/json"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
)

// startEcho serves the built-in upstream: 200 and a JSON echo of the
// request (method, uri, host, headers, body).
func startEcho(errLog *log.Logger) (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{ErrorLog: errLog, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<20))
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{
			"upstream": "echo",
			"method":   r.Method,
			"uri":      r.RequestURI,
			"host":     r.Host,
			"headers":  r.Header,
			"body":     string(body),
		})
	})}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			errLog.Printf("echo upstream: %v", err)
		}
	}()
	return "http://" + ln.Addr().String(), func() { srv.Close() }, nil
}
