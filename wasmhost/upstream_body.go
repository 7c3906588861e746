package wasmhost

import (
	"context"
	"io"
	"net/http"
)

// chunkSize bounds one read of an upstream body; a read returns whatever
// has arrived, up to this.
const chunkSize = 16 << 10

// upstreamBody is the body of an upstream response, read one chunk at a
// time on its own goroutine (run) when the stream asks for it (want), so
// that the body reaches the guest and the client as it arrives.
type upstreamBody struct {
	resp   *http.Response
	cancel context.CancelFunc // ends the upstream request
	want   chan struct{}      // one token per chunk asked for; holds one
	buf    []byte
}

// upstreamChunk is what one read brought: bytes, and maybe the end of the
// body (with the trailers) or a failure (the upstream reset mid-body).
type upstreamChunk struct {
	data     []byte
	end      bool
	trailers [][2]string
	err      error
}

// run reads a chunk each time one is asked for and hands it to deliver,
// until the body ends or fails, or the request is cancelled (the stream
// ended, or the client went away).
func (b *upstreamBody) run(deliver func(upstreamChunk)) {
	defer b.close()
	ctx := b.resp.Request.Context()
	for {
		select {
		case <-b.want:
		case <-ctx.Done():
			return
		}
		c := b.next()
		if c.err != nil && ctx.Err() != nil {
			return // the stream ended or the client left: no upstream reset
		}
		deliver(c)
		if c.end || c.err != nil {
			return
		}
	}
}

// next reads until it has bytes, the end or an error.
func (b *upstreamBody) next() upstreamChunk {
	if b.buf == nil {
		b.buf = make([]byte, chunkSize)
	}
	for {
		n, err := b.resp.Body.Read(b.buf)
		if n == 0 && err == nil {
			continue
		}
		c := upstreamChunk{data: append([]byte(nil), b.buf[:n]...)}
		switch {
		case err == io.EOF:
			c.end = true
			c.trailers = sortedHeader(b.resp.Trailer)
		case err != nil:
			c.err = err
		}
		return c
	}
}

func (b *upstreamBody) close() {
	b.resp.Body.Close()
	b.cancel()
}
