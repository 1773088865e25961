// The desk's orders: what the tools read. A real pack reads them from its
// store over HTTP; here they are data, so the tests need no service.
export interface Order {
  readonly id: string;
  readonly customer: string;
  readonly totalCents: number;
}

const orders: ReadonlyMap<string, Order> = new Map([
  ['ord_1001', { id: 'ord_1001', customer: 'Ada', totalCents: 4200 }],
  ['ord_1002', { id: 'ord_1002', customer: 'Grace', totalCents: 990 }],
]);

export function findOrder(id: string): Order | undefined {
  return orders.get(id);
}
