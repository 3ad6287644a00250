// Command volumeapp is the program of the image the volume tests import (volume_test.go): an
// image with VOLUME /data, a file /data/seed in it, and this program. At start it reads the
// marker /data/marker and, when there is none, writes its --version there; GET / answers
// "version V marker M seed S", M being what the marker held at start ("none": it wrote it) and S
// what /data/seed holds ("none" without one). It exits 0 on SIGTERM.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
)

func main() {
	port := flag.Int("port", 8000, "port to listen on, on every interface")
	version := flag.String("version", "", "what this instance answers with and writes as the marker")
	dir := flag.String("dir", "/data", "the volume's path")
	flag.Parse()

	found := read(filepath.Join(*dir, "marker"))
	if found == "none" {
		if err := os.WriteFile(filepath.Join(*dir, "marker"), []byte(*version), 0o644); err != nil {
			log.Fatalf("volumeapp: write the marker: %v", err)
		}
	}
	seed := read(filepath.Join(*dir, "seed"))
	log.Printf("volumeapp: version %s marker %s seed %s", *version, found, seed)

	srv := &http.Server{Addr: fmt.Sprintf(":%d", *port), Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, "version %s marker %s seed %s\n", *version, found, seed)
	})}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	go func() {
		<-ctx.Done()
		_ = srv.Shutdown(context.Background())
	}()
	if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		log.Fatalf("volumeapp: %v", err)
	}
}

// read is the trimmed content of the file at path, "none" when there is no such file.
func read(path string) string {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return "none"
	}
	if err != nil {
		log.Fatalf("volumeapp: %v", err)
	}
	return strings.TrimSpace(string(b))
}
