package seccomp

import (
	"fmt"

	"golang.org/x/net/bpf"
)

// label names a place in a program under construction. The zero label is
// the next instruction, so a jump to it falls through.
type label int

// assembler builds a classic BPF program with forward jumps to labels. It
// refuses a jump longer than a conditional jump can encode rather than
// rewriting the program around it: the filter is small enough that such a
// jump is a layout mistake, and the tests would report it.
type assembler struct {
	prog  []bpf.Instruction
	jumps []pendingJump
	at    []int // at[l-1] is the index label l was placed at, or -1
}

type pendingJump struct {
	pc     int
	jt, jf label
}

func (a *assembler) newLabel() label {
	a.at = append(a.at, -1)
	return label(len(a.at))
}

// place puts l at the next instruction emitted.
func (a *assembler) place(l label) { a.at[l-1] = len(a.prog) }

func (a *assembler) emit(ins bpf.Instruction) { a.prog = append(a.prog, ins) }

// jumpIf emits a conditional jump to jt if A cond val holds, else to jf.
func (a *assembler) jumpIf(cond bpf.JumpTest, val uint32, jt, jf label) {
	a.jumps = append(a.jumps, pendingJump{pc: len(a.prog), jt: jt, jf: jf})
	a.emit(bpf.JumpIf{Cond: cond, Val: val})
}

func (a *assembler) ret(val uint32) { a.emit(bpf.RetConstant{Val: val}) }

// load32 loads the 32-bit word at off in struct seccomp_data into A.
func (a *assembler) load32(off uint32) { a.emit(bpf.LoadAbsolute{Off: off, Size: 4}) }

// assemble resolves the jumps and encodes the program.
func (a *assembler) assemble() ([]bpf.RawInstruction, error) {
	for _, j := range a.jumps {
		jt, err := a.skip(j.pc, j.jt)
		if err != nil {
			return nil, err
		}
		jf, err := a.skip(j.pc, j.jf)
		if err != nil {
			return nil, err
		}
		ins := a.prog[j.pc].(bpf.JumpIf)
		ins.SkipTrue, ins.SkipFalse = jt, jf
		a.prog[j.pc] = ins
	}
	raw, err := bpf.Assemble(a.prog)
	if err != nil {
		return nil, fmt.Errorf("assemble filter: %w", err)
	}
	return raw, nil
}

func (a *assembler) skip(pc int, l label) (uint8, error) {
	if l == 0 {
		return 0, nil
	}
	dest := a.at[l-1]
	if dest < 0 {
		return 0, fmt.Errorf("assemble filter: jump at %d to a label never placed", pc)
	}
	n := dest - pc - 1
	if n < 0 || n > 255 {
		return 0, fmt.Errorf("assemble filter: jump at %d to %d does not fit a conditional jump", pc, dest)
	}
	return uint8(n), nil
}
