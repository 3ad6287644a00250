package lb

import (
	"bufio"
	"fmt"
	"net"
	rm "runtime/metrics"
	"testing"
	"time"
)

func TestZZMem(t *testing.T) {
	b := &testing.B{}
	_ = b
	set := LabSettings("127.0.0.1:0", []string{fastBackendT(t)})
	set.Interval, set.Timeout = time.Hour, time.Second
	l := startLB(t, set)
	dump := func(tag string) {
		descs := []string{"/memory/classes/heap/stacks:bytes", "/memory/classes/os-stacks:bytes", "/memory/classes/heap/objects:bytes",
			"/memory/classes/heap/free:bytes", "/memory/classes/heap/released:bytes", "/memory/classes/heap/unused:bytes", "/memory/classes/total:bytes", "/memory/classes/metadata/other:bytes", "/memory/classes/other:bytes"}
		s := make([]rm.Sample, len(descs))
		for i := range s {
			s[i].Name = descs[i]
		}
		rm.Read(s)
		out := tag
		for _, x := range s {
			out += fmt.Sprintf(" %s=%dK", x.Name[16:], x.Value.Uint64()/1024)
		}
		t.Log(out)
	}
	dump("before")
	var conns []net.Conn
	for i := 0; i < 2000; i++ {
		c, _ := net.Dial("tcp", l.Addr())
		o := &oneConn{c: c, br: bufio.NewReaderSize(c, 256)}
		o.c.Write(benchReq)
		o.br.ReadString('k')
		conns = append(conns, c)
	}
	dump("after")
	time.Sleep(3 * time.Second)
	dump("trimmed")
}

func fastBackendT(t *testing.T) string { return fastBackend(t) }
