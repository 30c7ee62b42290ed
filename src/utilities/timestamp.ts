// Strict parser for the string a JavaScript Date converts to, e.g.
//   "Sat Nov 21 2026 11:04:39 GMT+0100 (Central European Standard Time)".
// Only that form is accepted, with a weekday that matches the date and every field in range:
// anything else is refused rather than guessed at (Date.parse accepts far too much).

const WEEKDAYS = ['Sun', 'Mon', 'Tue', 'Wed', 'Thu', 'Fri', 'Sat'];
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const FORM =
  /^([A-Z][a-z]{2}) ([A-Z][a-z]{2}) (\d{2}) (\d{4}) (\d{2}):(\d{2}):(\d{2}) GMT([+-])(\d{2})(\d{2}) \(([^()]{1,100})\)$/;

/** Unix seconds for a JavaScript Date string, or undefined when it is not one. */
export function parseDateString(input: string): number | undefined {
  const match = FORM.exec(input);
  if (!match) return undefined;
  const [, weekday, monthName, dd, yyyy, hh, mi, ss, sign, offH, offM, zone] = match as unknown as string[];
  const month = MONTHS.indexOf(monthName!);
  const [day, year, hour, minute, second] = [dd, yyyy, hh, mi, ss].map(Number) as [number, number, number, number, number];
  const [offsetHours, offsetMinutes] = [Number(offH), Number(offM)];
  if (month < 0 || !WEEKDAYS.includes(weekday!) || zone!.trim() === '') return undefined;
  if (hour > 23 || minute > 59 || second > 59 || offsetHours > 14 || offsetMinutes > 59) return undefined;
  if (day < 1 || day > daysInMonth(year, month)) return undefined;

  const localMs = Date.UTC(year, month, day, hour, minute, second);
  // Date.UTC maps years 0-99 to 1900-1999; set the full year explicitly.
  const local = new Date(localMs);
  local.setUTCFullYear(year);
  if (WEEKDAYS[local.getUTCDay()] !== weekday) return undefined;
  const offsetMs = (sign === '-' ? -1 : 1) * (offsetHours * 60 + offsetMinutes) * 60_000;
  return Math.floor((local.getTime() - offsetMs) / 1000);
}

function daysInMonth(year: number, month: number): number {
  const leap = (year % 4 === 0 && year % 100 !== 0) || year % 400 === 0;
  return [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month]!;
}
