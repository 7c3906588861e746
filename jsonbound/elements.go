package jsonbound

// Elements lists the elements of the array that is body's one value, as
// spans body[span[0]:span[1]], appended to dst[:0]: at most max of them,
// more true when the array has more (max < 0 counts as 0). body is a text ReadBody accepted;
// when its value is not an array, spans is empty. It does not look
// inside the elements (no recursion): its work is linear in body's size,
// and it allocates only when dst is too small.
func Elements(body string, dst [][2]int, max int) (spans [][2]int, more bool) {
	spans, max = dst[:0], clampZero(max)
	for start, end, i := NextElement(body, 0); start >= 0; start, end, i = NextElement(body, i) {
		if len(spans) == max {
			return spans, true
		}
		spans = append(spans, [2]int{start, end})
	}
	return spans, false
}

// NextElement is Elements one element at a time, without a list: the
// span of the element of body's array at or after offset i (0 for the
// first, then the last call's next), or start -1 past the last element
// or when body's value is not an array.
func NextElement(body string, i int) (start, end, next int) {
	if i == 0 {
		if i = skipSpace(body, 0); i == len(body) || body[i] != '[' {
			return -1, -1, len(body)
		}
		i = skipSpace(body, i+1)
	}
	if i >= len(body) || body[i] == ']' {
		return -1, -1, len(body)
	}
	end = skipValue(body, i)
	if next = skipSpace(body, end); next < len(body) && body[next] == ',' {
		next = skipSpace(body, next+1)
	}
	return i, end, next
}

// NextStart is where an element of body's array begins, as NextElement
// finds it but without skipping the element: i is 0 for the first, else
// the end of the element before (its caller skipped it); -1 past the
// last element or when body's value is not an array.
func NextStart(body string, i int) int {
	if i == 0 {
		if i = skipSpace(body, 0); i == len(body) || body[i] != '[' {
			return -1
		}
		i++
	} else if i = skipSpace(body, i); i < len(body) && body[i] == ',' {
		i++
	}
	if i = skipSpace(body, i); i >= len(body) || body[i] == ']' {
		return -1
	}
	return i
}

// clampZero is n, or 0 when n is negative.
func clampZero(n int) int {
	if n < 0 {
		return 0
	}
	return n
}
