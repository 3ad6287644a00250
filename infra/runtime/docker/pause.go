package docker

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"fmt"
)

// pauseProgram is the whole program of a network sandbox (sandbox.go): a static ELF executable
// for the engine's architecture (GOARCH names: amd64, arm64) that does nothing but sleep in a
// system call, again after every signal, until it is killed. As PID 1 of its container it
// ignores SIGTERM, so a sandbox is removed by force (SIGKILL), never stopped. It is a few bytes
// of machine code in one loadable segment; no file of the host goes into the image.
func pauseProgram(arch string) ([]byte, error) {
	var machine elf.Machine
	var code []byte
	switch arch {
	case "amd64":
		machine = elf.EM_X86_64
		code = []byte{
			0xb8, 0x22, 0x00, 0x00, 0x00, // mov eax, 34 (pause)
			0x0f, 0x05, // syscall
			0xeb, 0xf7, // jmp back to the mov
		}
	case "arm64":
		machine = elf.EM_AARCH64
		for _, insn := range []uint32{
			0xd2800000, // mov x0, #0    fds: none
			0xd2800001, // mov x1, #0    nfds
			0xd2800002, // mov x2, #0    timeout: none, wait forever
			0xd2800003, // mov x3, #0    sigmask: unchanged
			0xd2800004, // mov x4, #0    sigsetsize
			0xd2800928, // mov x8, #73   ppoll (arm64 has no pause)
			0xd4000001, // svc #0
			0x17fffff9, // b back to the first mov
		} {
			code = binary.LittleEndian.AppendUint32(code, insn)
		}
	default:
		return nil, fmt.Errorf("the engine's architecture %q has no network sandbox program (zero502 has one for amd64 and arm64); "+
			"run the service on an amd64 or arm64 engine, or with rollout.runtime: process", arch)
	}
	const base = 0x400000
	hdrSize := binary.Size(elf.Header64{})
	progSize := binary.Size(elf.Prog64{})
	size := uint64(hdrSize + progSize + len(code))
	hdr := elf.Header64{
		Type:      uint16(elf.ET_EXEC),
		Machine:   uint16(machine),
		Version:   uint32(elf.EV_CURRENT),
		Entry:     base + uint64(hdrSize+progSize),
		Phoff:     uint64(hdrSize),
		Ehsize:    uint16(hdrSize),
		Phentsize: uint16(progSize),
		Phnum:     1,
	}
	copy(hdr.Ident[:], elf.ELFMAG)
	hdr.Ident[elf.EI_CLASS] = byte(elf.ELFCLASS64)
	hdr.Ident[elf.EI_DATA] = byte(elf.ELFDATA2LSB)
	hdr.Ident[elf.EI_VERSION] = byte(elf.EV_CURRENT)
	prog := elf.Prog64{
		Type:   uint32(elf.PT_LOAD),
		Flags:  uint32(elf.PF_R | elf.PF_X),
		Vaddr:  base,
		Paddr:  base,
		Filesz: size,
		Memsz:  size,
		Align:  0x1000,
	}
	var b bytes.Buffer
	_ = binary.Write(&b, binary.LittleEndian, hdr)
	_ = binary.Write(&b, binary.LittleEndian, prog)
	b.Write(code)
	return b.Bytes(), nil
}
