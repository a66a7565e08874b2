package analysis

import (
	"encoding/json"
	"fmt"
	"testing"
)

func TestValidate(t *testing.T) {
	rows := rowsOf(t, `[
		{"id":1,"email":"a@x.org","age":30,"role":"admin","tags":[]},
		{"id":2,"email":"bad","age":"17","role":"guest","tags":"x"},
		{"id":1,"email":null,"age":150.5,"role":"Admin"},
		{"email":"c@x.org","age":"abc","role":"user"}
	]`)
	params := `{"rules":[
		{"field":"id","rule":"required"},
		{"field":"id","rule":"type","value":"integer"},
		{"field":"id","rule":"unique"},
		{"field":"email","rule":"regex","value":"^[^@]+@[^@]+$"},
		{"field":"age","rule":"min","value":18},
		{"field":"age","rule":"max","value":120},
		{"field":"role","rule":"enum","value":["admin","user"]},
		{"field":"tags","rule":"type","value":"array"},
		{"field":"email","rule":"required"}]}`
	res, err := Run("validate", rows, json.RawMessage(params))
	if err != nil {
		t.Fatal(err)
	}
	// Row 0 is clean. Row 1: "bad" has no @, "17" < 18, "guest" is not listed,
	// tags is a string. Row 2: id 1 again, 150.5 > 120, "Admin" differs in case,
	// email is null (regex skips it, required does not). Row 3: no id, "abc"
	// is not a number for min nor for max.
	sameJSON(t, res.Result, `{"valid":false,"violation_count":11,"violations":[
		{"row":1,"field":"email","rule":"regex","message":"\"bad\" does not match ^[^@]+@[^@]+$"},
		{"row":1,"field":"age","rule":"min","message":"\"17\" is less than the minimum 18"},
		{"row":1,"field":"role","rule":"enum","message":"\"guest\" is not one of [\"admin\",\"user\"]"},
		{"row":1,"field":"tags","rule":"type","message":"is a string, not an array"},
		{"row":2,"field":"id","rule":"unique","message":"1 duplicates row 0"},
		{"row":2,"field":"age","rule":"max","message":"150.5 is more than the maximum 120"},
		{"row":2,"field":"role","rule":"enum","message":"\"Admin\" is not one of [\"admin\",\"user\"]"},
		{"row":2,"field":"email","rule":"required","message":"is null"},
		{"row":3,"field":"id","rule":"required","message":"is missing"},
		{"row":3,"field":"age","rule":"min","message":"\"abc\" is not a number"},
		{"row":3,"field":"age","rule":"max","message":"\"abc\" is not a number"}]}`)
	if res.RowsIn != 4 || res.RowsOut != 1 {
		t.Errorf("rows in, out = %d, %d; want 4, 1", res.RowsIn, res.RowsOut)
	}
}

func TestValidateRules(t *testing.T) {
	// Each case checks one rule against values, one row per value, and lists
	// the rows that break it.
	for _, tc := range []struct {
		name, rule string
		values     string // a JSON array; each element becomes {"v": element}
		want       []int  // rows with a violation
	}{
		{"required", `{"field":"v","rule":"required"}`, `[1,null,"",false,0,[],{}]`, []int{1}},
		{"type string", `{"field":"v","rule":"type","value":"string"}`, `["s","",1,"1",true,[],{},null]`, []int{2, 4, 5, 6}},
		{"type number", `{"field":"v","rule":"type","value":"number"}`, `[1,1.5,-0,1e300,"1",true,null]`, []int{4, 5}},
		{"type integer", `{"field":"v","rule":"type","value":"integer"}`, `[1,1.0,1e2,-7,1.5,"1",9007199254740993,1e400]`, []int{4, 5, 7}},
		{"type boolean", `{"field":"v","rule":"type","value":"boolean"}`, `[true,false,"true",0]`, []int{2, 3}},
		{"type object", `{"field":"v","rule":"type","value":"object"}`, `[{},{"a":1},[],"{}"]`, []int{2, 3}},
		{"type array", `{"field":"v","rule":"type","value":"array"}`, `[[],[1],{},"[]"]`, []int{2, 3}},
		{"min", `{"field":"v","rule":"min","value":18}`, `[18,17.999,"18","17",18.0,"x",true,[20],null]`, []int{1, 3, 5, 6, 7}},
		{"max", `{"field":"v","rule":"max","value":-1.5}`, `[-1.5,-1.4,"-2","abc",-9007199254740993]`, []int{1, 3}},
		{"min beyond 2^53", `{"field":"v","rule":"min","value":9007199254740993}`, `[9007199254740992,9007199254740993,9007199254740994]`, []int{0}},
		{"regex", `{"field":"v","rule":"regex","value":"^\\p{L}+$"}`, `["Zürich","東京","a1","",12,true]`, []int{2, 3, 4, 5}},
		{"regex on a number's text", `{"field":"v","rule":"regex","value":"^\\d{5}$"}`, `[12345,"02139",1234,1.5]`, []int{2, 3}},
		{"enum", `{"field":"v","rule":"enum","value":["a",1,null,[1]]}`, `["a","A",1,"1",1.0,[1],2]`, []int{1, 6}},
		{"unique", `{"field":"v","rule":"unique"}`, `["a",1,"a",1.0,"1",null,null,[1],[1]]`, []int{2, 3, 8}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var values []json.RawMessage
			if err := json.Unmarshal([]byte(tc.values), &values); err != nil {
				t.Fatal(err)
			}
			src := "["
			for i, v := range values {
				if i > 0 {
					src += ","
				}
				src += `{"v":` + string(v) + `}`
			}
			rows := rowsOf(t, src+"]")
			res, err := Run("validate", rows, json.RawMessage(`{"rules":[`+tc.rule+`]}`))
			if err != nil {
				t.Fatal(err)
			}
			vr := res.Result.(ValidateResult)
			got := []int{}
			for _, v := range vr.Violations {
				got = append(got, v.Row)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Errorf("rows with violations %v, want %v\n%+v", got, tc.want, vr.Violations)
			}
			if vr.Valid != (len(tc.want) == 0) || vr.ViolationCount != len(tc.want) || res.RowsOut != len(rows)-len(tc.want) {
				t.Errorf("valid %v, count %d, rows out %d", vr.Valid, vr.ViolationCount, res.RowsOut)
			}
		})
	}
}

func TestValidateManyViolations(t *testing.T) {
	rows := make([]map[string]any, MaxViolations+500)
	for i := range rows {
		rows[i] = map[string]any{}
	}
	res, err := Run("validate", rows, json.RawMessage(`{"rules":[{"field":"a","rule":"required"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	vr := res.Result.(ValidateResult)
	if len(vr.Violations) != MaxViolations || vr.ViolationCount != len(rows) || vr.Valid || res.RowsOut != 0 {
		t.Errorf("%d listed, count %d, valid %v, rows out %d", len(vr.Violations), vr.ViolationCount, vr.Valid, res.RowsOut)
	}
}

func TestValidateEmpty(t *testing.T) {
	res, err := Run("validate", nil, json.RawMessage(`{"rules":[{"field":"a","rule":"required"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	sameJSON(t, res.Result, `{"valid":true,"violations":[],"violation_count":0}`)
}

func TestValidateErrors(t *testing.T) {
	runErrorCases(t, []errorCase{
		{"no rules", "validate", `{}`, "parameters.rules", "is required"},
		{"rule not an object", "validate", `{"rules":["required"]}`, "parameters.rules[0]", "must be an object"},
		{"no field", "validate", `{"rules":[{"rule":"required"}]}`, "parameters.rules[0].field", "is required"},
		{"no rule", "validate", `{"rules":[{"field":"a"}]}`, "parameters.rules[0].rule", "is required"},
		{"unknown rule", "validate", `{"rules":[{"field":"a","rule":"required"},{"field":"a","rule":"email"}]}`, "parameters.rules[1].rule",
			`"email" is not one of required, type, min, max, regex, enum, unique`},
		{"unknown type", "validate", `{"rules":[{"field":"a","rule":"type","value":"date"}]}`, "parameters.rules[0].value",
			`"date" is not one of string, number, integer, boolean, object, array`},
		{"type without value", "validate", `{"rules":[{"field":"a","rule":"type"}]}`, "parameters.rules[0].value", "null is not one of"},
		{"min of a string", "validate", `{"rules":[{"field":"a","rule":"min","value":"3"}]}`, "parameters.rules[0].value", `must be a number for min, not "3"`},
		{"max without value", "validate", `{"rules":[{"field":"a","rule":"max"}]}`, "parameters.rules[0].value", "must be a number for max, not null"},
		{"bad regex", "validate", `{"rules":[{"field":"zip","rule":"regex","value":"[0-9"}]}`, "parameters.rules[0].value", `not a valid regular expression for field "zip"`},
		{"enum not a list", "validate", `{"rules":[{"field":"a","rule":"enum","value":"a,b"}]}`, "parameters.rules[0].value", "must be an array"},
		{"unknown key", "validate", `{"rules":[{"field":"a","rule":"required","message":"x"}]}`, "parameters.rules[0].message", "want field, rule, value"},
	})
}
