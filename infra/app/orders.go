package app

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"time"
)

// Order is one execution of POST /orders: one JSON line in the orders log.
type Order struct {
	Key     string    `json:"key"`
	Version string    `json:"version"`
	At      time.Time `json:"at"`
}

// orderBook records orders in memory (GET /orders) and, when a log is configured, appends each
// as one JSON line with a single O_APPEND write: several processes can share one log and every
// line lands whole, and a line is in the kernel before the 201 goes out, so it survives a SIGKILL.
type orderBook struct {
	mu     sync.Mutex
	file   *os.File
	orders []Order
}

func openOrderBook(path string) (*orderBook, error) {
	b := &orderBook{}
	if path == "" {
		return b, nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return nil, fmt.Errorf("app: --orders-log %s: %w", path, err)
	}
	b.file = f
	return b, nil
}

// record appends o to the log (first) and to memory.
func (b *orderBook) record(o Order) error {
	line, err := json.Marshal(o)
	if err != nil {
		return err
	}
	line = append(line, '\n')
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.file != nil {
		if _, err := b.file.Write(line); err != nil {
			return fmt.Errorf("append to orders log %s: %w", b.file.Name(), err)
		}
	}
	b.orders = append(b.orders, o)
	return nil
}

func (b *orderBook) list() []Order {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]Order{}, b.orders...)
}

func (b *orderBook) close() error {
	if b.file == nil {
		return nil
	}
	return b.file.Close()
}

// readOrders reads an orders log written by any number of app processes. A missing file is no
// orders; a line that does not parse is an error naming the line.
func readOrders(path string) ([]Order, error) {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []Order
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		var o Order
		if err := json.Unmarshal(sc.Bytes(), &o); err != nil {
			return nil, fmt.Errorf("orders log %s line %d: %w", path, n, err)
		}
		out = append(out, o)
	}
	return out, sc.Err()
}

// Executions counts how many times each Idempotency-Key was executed; any count above 1 is a
// duplicate execution.
func Executions(orders []Order) map[string]int {
	n := map[string]int{}
	for _, o := range orders {
		n[o.Key]++
	}
	return n
}
