// Command sqsemu is the SQS-compatible server the project's SQS tests run
// against (scripts/sqs.sh builds it into bin/ and starts it): goaws
// v0.4.5's in-memory queues, behind a front that speaks the AWS JSON
// protocol (X-Amz-Target: AmazonSQS.<Operation>) as well as goaws's own
// query protocol.
//
// Why a front: the AWS SDK for Go v2 (service/sqs since 2023) sends only
// the JSON protocol, and goaws v0.4.5 (the newest goaws in the module
// proxy) answers only the query protocol. The front turns a JSON request
// into the form goaws reads, calls goaws's handler in process, and turns
// its XML answer back into JSON. It supports the operations the tests use:
// CreateQueue, GetQueueUrl, DeleteQueue, PurgeQueue, GetQueueAttributes,
// SetQueueAttributes, SendMessage, ReceiveMessage, DeleteMessage,
// ChangeMessageVisibility. ReceiveMessage's VisibilityTimeout, which goaws
// ignores, is applied with a ChangeMessageVisibility per message.
//
// What goaws does (and so what the tests rely on): a received message is
// invisible for the queue's VisibilityTimeout (whole seconds; checked by a
// sweep once a second), ChangeMessageVisibility sets a new deadline from
// now (0 makes it visible at once), a redrive policy moves a message to the
// dead-letter queue after maxReceiveCount receives. What it does not:
// ApproximateReceiveCount is always 1.
//
//	sqsemu -addr 127.0.0.1:4100
package main

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"encoding/xml"
	"flag"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/Admiral-Piett/goaws/app"
	"github.com/Admiral-Piett/goaws/app/gosqs"
	"github.com/Admiral-Piett/goaws/app/router"
	"github.com/sirupsen/logrus"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:4100", "listen address")
	visibility := flag.Int("visibility", 30, "default VisibilityTimeout of new queues, seconds")
	flag.Parse()
	host, port, ok := strings.Cut(*addr, ":")
	if !ok {
		log.Fatalf("sqsemu: -addr %q: want host:port", *addr)
	}
	logrus.SetLevel(logrus.WarnLevel)
	logrus.SetOutput(os.Stderr)
	app.CurrentEnvironment = app.Environment{
		Host: host, Port: port, AccountID: "100010001000",
		QueueAttributeDefaults: app.EnvQueueAttributes{VisibilityTimeout: *visibility, MaximumMessageSize: 262144},
	}
	quit := make(chan struct{})
	go gosqs.PeriodicTasks(time.Second, quit)
	srv := &http.Server{Addr: *addr, Handler: newFront(router.New()), ReadHeaderTimeout: 10 * time.Second}
	log.Printf("sqsemu (goaws v0.4.5 + JSON protocol) listening on %s", *addr)
	log.Fatal(srv.ListenAndServe())
}

// front answers JSON-protocol requests itself (through goaws) and passes
// everything else to goaws. mu keeps DeleteQueue from running during any
// other call: goaws's ReceiveMessage dereferences its queue after a long
// poll without checking it still exists, and its panic then leaves goaws's
// queue lock held, which hangs every later request.
type front struct {
	goaws http.Handler
	mu    sync.RWMutex
}

func newFront(goaws http.Handler) http.Handler { return &front{goaws: goaws} }

func (f *front) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	target := r.Header.Get("X-Amz-Target")
	op, ok := strings.CutPrefix(target, "AmazonSQS.")
	if !ok {
		f.goaws.ServeHTTP(w, r)
		return
	}
	var in map[string]any
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err == nil && len(body) > 0 {
		err = json.Unmarshal(body, &in)
	}
	if err != nil {
		jsonError(w, http.StatusBadRequest, "InvalidParameterValue", "AWS.SimpleQueueService.InvalidParameterValue", err.Error())
		return
	}
	if op == "DeleteQueue" {
		f.mu.Lock()
	} else {
		f.mu.RLock()
	}
	out, status, err := f.call(op, in)
	if op == "DeleteQueue" {
		f.mu.Unlock()
	} else {
		f.mu.RUnlock()
	}
	if err != nil {
		jsonError(w, status, "InvalidAction", "AWS.SimpleQueueService.InvalidAction", err.Error())
		return
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	w.WriteHeader(status)
	w.Write(out) //nolint:errcheck
}

// goawsError is goaws's XML error answer.
type goawsError struct {
	Error struct {
		Type, Code, Message string
	} `xml:"Error"`
}

// errCodes maps goaws's error codes to the JSON protocol's error types.
var errCodes = map[string]string{
	"AWS.SimpleQueueService.NonExistentQueue":   "QueueDoesNotExist",
	"AWS.SimpleQueueService.MessageNotInFlight": "MessageNotInflight",
	"AWS.SimpleQueueService.ValidationError":    "InvalidParameterValue",
}

func jsonError(w http.ResponseWriter, status int, typ, queryCode, msg string) {
	w.Header().Set("Content-Type", "application/x-amz-json-1.0")
	w.Header().Set("x-amzn-query-error", queryCode+";Sender")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(map[string]string{"__type": "com.amazonaws.sqs#" + typ, "message": msg}) //nolint:errcheck
}

// query calls goaws with a form, returning its status and XML body.
func (f *front) query(form url.Values) (int, []byte) {
	req := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	rec := httptest.NewRecorder()
	f.goaws.ServeHTTP(rec, req)
	return rec.Code, rec.Body.Bytes()
}

// call runs one JSON operation; a goaws error comes back as its JSON form
// with goaws's status.
func (f *front) call(op string, in map[string]any) ([]byte, int, error) {
	form := url.Values{"Action": {op}}
	str := func(k string) string {
		switch v := in[k].(type) {
		case string:
			return v
		case float64:
			return strconv.FormatInt(int64(v), 10)
		}
		return ""
	}
	for _, k := range []string{"QueueName", "QueueUrl", "MessageBody", "ReceiptHandle", "VisibilityTimeout",
		"MaxNumberOfMessages", "WaitTimeSeconds", "DelaySeconds", "MessageGroupId", "MessageDeduplicationId", "QueueNamePrefix"} {
		if s := str(k); s != "" {
			form.Set(k, s)
		}
	}
	if attrs, ok := in["Attributes"].(map[string]any); ok {
		for i, name := range sortedKeys(attrs) {
			form.Set(fmt.Sprintf("Attribute.%d.Name", i+1), name)
			form.Set(fmt.Sprintf("Attribute.%d.Value", i+1), fmt.Sprint(attrs[name]))
		}
	}
	if names, ok := in["AttributeNames"].([]any); ok {
		for i, n := range names {
			form.Set(fmt.Sprintf("AttributeName.%d", i+1), fmt.Sprint(n))
		}
	}
	if attrs, ok := in["MessageAttributes"].(map[string]any); ok {
		for i, name := range sortedKeys(attrs) {
			v, _ := attrs[name].(map[string]any)
			p := fmt.Sprintf("MessageAttribute.%d.", i+1)
			form.Set(p+"Name", name)
			form.Set(p+"Value.DataType", fmt.Sprint(v["DataType"]))
			if s, ok := v["StringValue"].(string); ok {
				form.Set(p+"Value.StringValue", s)
			}
			if s, ok := v["BinaryValue"].(string); ok {
				form.Set(p+"Value.BinaryValue", s)
			}
		}
	}
	status, body := f.query(form)
	if status >= 300 {
		var e goawsError
		if err := xml.Unmarshal(body, &e); err != nil || e.Error.Code == "" {
			return nil, status, fmt.Errorf("%s: goaws answered %d: %s", op, status, bytes.TrimSpace(body))
		}
		typ := errCodes[e.Error.Code]
		if typ == "" {
			typ = strings.TrimPrefix(e.Error.Code, "AWS.SimpleQueueService.")
		}
		out, _ := json.Marshal(map[string]string{"__type": "com.amazonaws.sqs#" + typ, "message": e.Error.Message})
		return out, status, nil
	}
	var out any
	switch op {
	case "CreateQueue":
		var r app.CreateQueueResponse
		if err := xml.Unmarshal(body, &r); err != nil {
			return nil, 500, err
		}
		out = map[string]any{"QueueUrl": r.Result.QueueUrl}
	case "GetQueueUrl":
		var r app.GetQueueUrlResponse
		if err := xml.Unmarshal(body, &r); err != nil {
			return nil, 500, err
		}
		out = map[string]any{"QueueUrl": r.Result.QueueUrl}
	case "GetQueueAttributes":
		var r app.GetQueueAttributesResponse
		if err := xml.Unmarshal(body, &r); err != nil {
			return nil, 500, err
		}
		m := map[string]string{}
		for _, a := range r.Result.Attrs {
			m[a.Name] = a.Value
		}
		out = map[string]any{"Attributes": m}
	case "SendMessage":
		var r app.SendMessageResponse
		if err := xml.Unmarshal(body, &r); err != nil {
			return nil, 500, err
		}
		m := map[string]any{"MessageId": r.Result.MessageId, "MD5OfMessageBody": r.Result.MD5OfMessageBody}
		if r.Result.MD5OfMessageAttributes != "" {
			m["MD5OfMessageAttributes"] = r.Result.MD5OfMessageAttributes
		}
		if r.Result.SequenceNumber != "" {
			m["SequenceNumber"] = r.Result.SequenceNumber
		}
		out = m
	case "ReceiveMessage":
		var r app.ReceiveMessageResponse
		if err := xml.Unmarshal(body, &r); err != nil {
			return nil, 500, err
		}
		msgs := []any{}
		for _, m := range r.Result.Message {
			if vt := form.Get("VisibilityTimeout"); vt != "" {
				f.query(url.Values{"Action": {"ChangeMessageVisibility"}, "QueueUrl": {form.Get("QueueUrl")},
					"ReceiptHandle": {m.ReceiptHandle}, "VisibilityTimeout": {vt}})
			}
			attrs := map[string]string{}
			for _, a := range m.Attributes {
				attrs[a.Name] = a.Value
			}
			jm := map[string]any{"MessageId": m.MessageId, "ReceiptHandle": m.ReceiptHandle, "MD5OfBody": m.MD5OfBody,
				"Body": string(m.Body), "Attributes": attrs}
			if len(m.MessageAttributes) > 0 {
				mattrs := map[string]any{}
				for _, a := range m.MessageAttributes {
					v := map[string]any{"DataType": a.Value.DataType}
					if a.Value.StringValue != "" {
						v["StringValue"] = a.Value.StringValue
					}
					if a.Value.BinaryValue != "" {
						if _, err := base64.StdEncoding.DecodeString(a.Value.BinaryValue); err == nil {
							v["BinaryValue"] = a.Value.BinaryValue
						}
					}
					mattrs[a.Name] = v
				}
				jm["MessageAttributes"] = mattrs
				jm["MD5OfMessageAttributes"] = m.MD5OfMessageAttributes
			}
			msgs = append(msgs, jm)
		}
		out = map[string]any{"Messages": msgs}
	case "DeleteQueue", "PurgeQueue", "SetQueueAttributes", "DeleteMessage", "ChangeMessageVisibility":
		out = map[string]any{}
	default:
		return nil, http.StatusBadRequest, fmt.Errorf("operation %s is not supported by sqsemu's JSON front", op)
	}
	b, err := json.Marshal(out)
	return b, http.StatusOK, err
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
