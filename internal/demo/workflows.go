package demo

// The demo's workflows: a chain of timed steps, a durable nap, an approval
// that waits for a signal, and a parent that fans out to children.

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/voltro/voltro"
)

// ChainInput: N steps, each sleeping StepMillis and returning a value.
type ChainInput struct {
	Steps      int `json:"steps"`
	StepMillis int `json:"stepMillis"`
}

// ChainOutput is what demo.chain returns.
type ChainOutput struct {
	Values []string `json:"values"`
}

// Chain is demo.chain.
var Chain = voltro.NewWorkflow("demo.chain", func(wc *voltro.WorkflowContext, in ChainInput) (ChainOutput, error) {
	if in.Steps <= 0 {
		in.Steps = 5
	}
	host, _ := os.Hostname()
	var out ChainOutput
	for i := 0; i < in.Steps; i++ {
		v, err := voltro.Step(wc, fmt.Sprintf("step-%d", i+1), func(ctx context.Context) (string, error) {
			select {
			case <-time.After(time.Duration(in.StepMillis) * time.Millisecond):
			case <-ctx.Done():
				return "", ctx.Err()
			}
			return fmt.Sprintf("step %d done by %s pid %d", i+1, host, os.Getpid()), nil
		})
		if err != nil {
			return out, err
		}
		out.Values = append(out.Values, v)
	}
	return out, nil
})

// NapInput: how long to sleep, durably.
type NapInput struct {
	Seconds float64 `json:"seconds"`
}

// Nap is demo.nap: sleeps durably, then reports when it woke.
var Nap = voltro.NewWorkflow("demo.nap", func(wc *voltro.WorkflowContext, in NapInput) (string, error) {
	if in.Seconds <= 0 {
		in.Seconds = 10
	}
	fell, err := voltro.Step(wc, "fall-asleep", func(ctx context.Context) (time.Time, error) { return time.Now(), nil })
	if err != nil {
		return "", err
	}
	wc.Sleep(time.Duration(in.Seconds * float64(time.Second)))
	woke, err := voltro.Step(wc, "wake-up", func(ctx context.Context) (time.Time, error) { return time.Now(), nil })
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("slept %s", woke.Sub(fell).Round(time.Millisecond)), nil
})

// ApprovalInput names what is to be approved.
type ApprovalInput struct {
	Item           string  `json:"item"`
	TimeoutSeconds float64 `json:"timeoutSeconds"`
}

// Decision is the approve signal's payload.
type Decision struct {
	Approved bool   `json:"approved"`
	By       string `json:"by"`
}

// Approval is demo.approval: waits for the "approve" signal.
var Approval = voltro.NewWorkflow("demo.approval", func(wc *voltro.WorkflowContext, in ApprovalInput) (string, error) {
	d, err := voltro.AwaitSignal[Decision](wc, "approve", time.Duration(in.TimeoutSeconds*float64(time.Second)))
	if err != nil {
		return "", err
	}
	verdict := "rejected"
	if d.Approved {
		verdict = "approved"
	}
	return fmt.Sprintf("%s %s by %s", in.Item, verdict, d.By), nil
})

// FanOutInput: how many children, each a short chain.
type FanOutInput struct {
	Children int `json:"children"`
}

// FanOut is demo.fanout: a parent that runs demo.chain children one by one.
var FanOut = voltro.NewWorkflow("demo.fanout", func(wc *voltro.WorkflowContext, in FanOutInput) (int, error) {
	if in.Children <= 0 {
		in.Children = 3
	}
	total := 0
	for i := 0; i < in.Children; i++ {
		out, err := voltro.ExecuteChild(wc, Chain, ChainInput{Steps: 2, StepMillis: 100})
		if err != nil {
			return total, err
		}
		total += len(out.Values)
	}
	return total, nil
})
